/**
 * What a student reads while a real environment starts on the real node (issue 28): deploy/
 * jupyter.yaml's Jupyter (its image built here, cluster/node/localTemplates.ts) behind the proxy,
 * whose upstream is the Userland's Service reached through the harness's relay. From the first
 * request to Jupyter's own page every answer is the starting page, never an error page, and its
 * server-rendered text says where the start is (lib/startProgress.ts): each step reached with how
 * long it took, and what it waits for now.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { childNames } from "../../api/naming.ts";
import { localTemplate } from "../../cluster/node/localTemplates.ts";
import { send, startProxy, testKeys, type Response } from "../../services/proxy/test/support.ts";
import { eventually, testCluster, testNamespace } from "../support/cluster.ts";
import { startOperator } from "../support/operator.ts";
import { createTemplate, createUserland, getService } from "../support/resources.ts";
import { exposeFromNode, realNode } from "../support/realNode.ts";

/** What a starting page says, as the student reads it before any script runs. */
interface Seen {
  status: number;
  title: string;
  phase: string;
  message: string;
  progress: string;
}

const text = (body: string, re: RegExp) => re.exec(body)?.[1]?.trim() ?? "";

function seen(r: Response): Seen {
  return {
    status: r.status,
    title: text(r.body, /<title>([^<]*)<\/title>/),
    phase: text(r.body, /<span class="status" id="phase">([^<]*)<\/span>/),
    message: text(r.body, /<span id="message"[^>]*>([^<]*)<\/span>/),
    progress: text(r.body, /<p class="muted" id="progress">([^<]*)<\/p>/),
  };
}

test("a real Jupyter starting: the starting page tells each step, then Jupyter, never an error page", async (t) => {
  const node = await realNode();
  const { info } = await testCluster();
  const template = await localTemplate("jupyter.yaml", {
    ctr: join(info.binDir, "ctr"),
    socket: node.containerdSocket,
  });
  // Jupyter answers its readiness check within a second or two of starting when its image is on
  // the node: on a loaded machine the whole wait could pass before the operator's report of it
  // reached the proxy (CI ci4 saw "Pending", then Jupyter). A first check 8 s after the start makes
  // the step the student must read last long enough to be read; what it reads is still the
  // operator's own report.
  const probe = template.spec.template.spec?.containers[0]?.readinessProbe;
  assert.ok(probe, "deploy/jupyter.yaml's Jupyter has a readiness check");
  probe.initialDelaySeconds = 8;
  const ns = await testNamespace(t, "node-starting");
  await startOperator(t, ns);
  await createTemplate(ns, "jupyter", template.spec);
  const keys = await testKeys(t);
  const proxy = await startProxy(t, ns, keys);
  const cookie = await keys.cookie("ada");
  await createUserland(ns, "ada", "ada", "jupyter");

  // The proxy reaches the Service through a relay into the node, there before the pod is.
  const serviceName = childNames("jupyter", "ada").service;
  const service = await eventually(`Service ${serviceName}`, async () => {
    const s = await getService(ns, serviceName);
    return s?.spec?.clusterIP ? s : undefined;
  });
  const relayed = await exposeFromNode(t, `${service.spec?.clusterIP}:80`);
  proxy.resolver.set(ns, serviceName, `http://127.0.0.1:${relayed}`);

  // The student's browser, as the starting page's refresh would: every answer until Jupyter's own.
  const pages: Seen[] = [];
  const started = Date.now();
  await eventually(
    "Jupyter's page through the proxy",
    async () => {
      const r = await send(proxy.port, {
        path: "/tree",
        headers: { host: "jupyter.example.test", cookie, accept: "text/html" },
      });
      pages.push(seen(r));
      return r.status === 200 && r.body.includes("notebook_list");
    },
    180_000,
    250,
  );
  t.diagnostic(`sign-in → Jupyter's page: ${Date.now() - started} ms, ${pages.length} answers`);
  const distinct = [...new Set(pages.map((p) => `${p.status} ${p.phase} ${p.message} | ${p.progress}`))];
  const shown = JSON.stringify(
    distinct.map((d) => d.replace(/\(\d+ s so far\)/, "(… so far)")),
    null,
    1,
  );

  t.diagnostic(`what the student read: ${shown}`);
  const starting = pages.slice(0, -1);
  assert.ok(starting.length > 0, "the start took longer than one answer");
  for (const page of starting) {
    assert.doesNotMatch(
      `${page.title} ${page.message}`,
      /not answering|taking too long|could not start/,
      shown,
    );
    assert.equal(page.status, 503, shown);
    assert.equal(page.title, "Your JupyterLab environment is starting", shown);
  }
  // What the student read on the way, from the page the server rendered.
  const progress = starting.map((p) => p.progress);
  assert.ok(
    progress.some((p) =>
      /^placed on a node \d+ s, .*image pulled, container started \d+ s; waiting for the app to answer its readiness check \(\d+ s so far\)$/.test(
        p,
      ),
    ),
    `the container started, the app not ready yet: ${shown}`,
  );
  // Each later page knows at least as much as the one before: steps are never forgotten.
  const steps = progress.map((p) => p.replace(/\(\d+ s so far\)/, "").match(/\d+ s\b/g)?.length ?? 0);
  for (const [i, n] of steps.entries()) assert.ok(i === 0 || n >= (steps[i - 1] ?? 0), shown);
});
