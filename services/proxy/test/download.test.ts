/**
 * The home page's Download my work (docs/decisions/0011-coursework.md, "Downloads"): the proxy
 * in-process with the real user-manager in-process, against the real control plane, the proxy's
 * ServiceAccount holding the chart's rights (userlands/archive through the user-manager). No
 * operator runs: the test stands in for it and the archive pod (a `copy.ts serve-archive` process
 * on 127.0.0.1), as services/user-manager/test/downloads.test.ts does.
 */
import assert from "node:assert/strict";
import { createWriteStream } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { request, type IncomingMessage } from "node:http";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { test } from "node:test";
import { extract, scratch, sha256sumOfFolder } from "../../../coursework/files/test/scratch.ts";
import { serviceAccountToken } from "../../../test/support/cluster.ts";
import { createTemplate, createUserland } from "../../../test/support/resources.ts";
import { standIn } from "../../user-manager/test/archiveStandIn.ts";
import { courseworkTemplateSpec } from "../../user-manager/test/courseworkSupport.ts";
import { startUserManager } from "../../user-manager/test/support.ts";
import { proxyKubeConfig, send, startProxy, testKeys } from "./support.ts";

const APEX = "apps.example.test";

function get(port: number, path: string, headers: Record<string, string>): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    request({ host: "127.0.0.1", port, path, headers }).once("response", resolve).once("error", reject).end();
  });
}

test("Download my work: the student's own home as a zip, linked from the home page; other Templates and other sites refused", async (t) => {
  const um = await startUserManager(t, { templates: [] });
  const ns = um.ns;
  const dir = await scratch(t);
  await createTemplate(ns, "lab", courseworkTemplateSpec());
  await createTemplate(ns, "plain", courseworkTemplateSpec());
  await createUserland(ns, "alice-lab", "alice", "lab");
  await createUserland(ns, "bob-lab", "bob", "lab");
  const home = join(dir, "alice");
  await mkdir(join(home, "assignments", "week1"), { recursive: true });
  await writeFile(join(home, "assignments", "week1", "lists.py"), "xs = [1, 2]\n");
  await writeFile(join(home, "notes.md"), "# mine\n");
  const archives = standIn(t, ns, (a) =>
    a.spec.source?.home?.user === "alice" ? home : { fail: "not alice" },
  );

  await proxyKubeConfig(ns);
  const keys = await testKeys(t);
  const tokenFile = join(keys.dir, "proxy-token");
  await writeFile(tokenFile, await serviceAccountToken(ns, "userland-proxy"));
  const proxy = await startProxy(t, ns, keys, {
    PROXY_USER_MANAGER_URL: um.base,
    PROXY_USER_MANAGER_TOKEN_FILE: tokenFile,
  });
  const headers = async (user: string, extra: Record<string, string> = {}) => ({
    host: APEX,
    cookie: await keys.cookie(user),
    "sec-fetch-site": "same-origin",
    ...extra,
  });

  const page = await send(proxy.port, {
    path: "/_userland/home",
    headers: { ...(await headers("alice")), accept: "text/html" },
  });
  assert.equal(page.status, 200);
  assert.match(page.body, /href="\/_userland\/download\?template=lab"[^>]*download/);
  assert.match(page.body, />Download my work</);

  const refused = async (user: string, path: string, extra: Record<string, string>, status: number) => {
    const r = await get(proxy.port, path, await headers(user, extra));
    r.resume();
    assert.equal(r.statusCode, status, `${user} ${path}`);
  };
  await refused("alice", "/_userland/download?template=plain", {}, 404);
  await refused("alice", "/_userland/download", {}, 404);
  await refused("alice", "/_userland/download?template=lab", { "sec-fetch-site": "cross-site" }, 403);
  await refused("mallory", "/_userland/download?template=lab", {}, 404);
  assert.equal(archives.length, 0, "nothing refused asked for an archive");

  const r = await get(proxy.port, "/_userland/download?template=lab", await headers("alice"));
  assert.equal(r.statusCode, 200);
  assert.equal(r.headers["content-type"], "application/zip");
  assert.match(String(r.headers["content-disposition"]), /^attachment; filename="alice-[a-z0-9]+-lab\.zip"$/);
  const zip = join(dir, "alice.zip");
  await pipeline(r, createWriteStream(zip));
  extract(zip, join(dir, "out"));
  assert.equal(sha256sumOfFolder(join(dir, "out")), sha256sumOfFolder(home));
  assert.deepEqual(archives[0]?.spec.source, { home: { user: "alice", templateName: "lab" } });

  // The user-manager could not make bob's (the stand-in reports it Failed): a page that says so.
  const failed = await get(proxy.port, "/_userland/download?template=lab", await headers("bob"));
  failed.resume();
  assert.equal(failed.statusCode, 502);
});
