/**
 * The Exam controller against the real API server on kwok (docs/decisions/0013-exams.md): at the
 * start its NetworkPolicy closes the class's environments of the Template, which run, and the
 * students' other Userlands stop; an operator killed mid-exam converges on what was changed behind
 * its back; at the end everything is exactly as before and the policy is gone.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Deployment } from "@kubernetes/client-node";
import { childNames, LABELS, MANAGED_BY } from "../../api/naming.ts";
import {
  ExamMarks,
  examsPath,
  parseExamNotice,
  type Exam,
  type ExamNotice,
  type Userland,
} from "../../api/v1alpha1/index.ts";
import { isNotFound } from "../../lib/kubeRest.ts";
import { paths } from "../../api/kubePaths.ts";
import { eventually, testNamespace } from "../../test/support/cluster.ts";
import { installCrds, startOperator, startOperatorServing } from "../../test/support/operator.ts";
import { stableJson } from "../compare.ts";
import {
  adminRest,
  createTemplate,
  deploymentsPath,
  simpleTemplateSpec,
  userlandsPath,
} from "../../test/support/resources.ts";

const policyPath = (ns: string, name?: string) =>
  paths.namespaced("networking.k8s.io", "v1", "networkpolicies", ns, name);

async function userland(
  ns: string,
  name: string,
  user: string,
  template: string,
  enabled: boolean,
  cls?: string,
) {
  const rest = await adminRest();
  await rest.create(userlandsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Userland",
    metadata: { name, ...(cls ? { labels: { [LABELS.class]: cls } } : {}) },
    spec: { user, templateName: template, enabled },
  });
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");

/**
 * A Lease that a killed operator leaves behind expires in 4 s instead of 15: the next one takes over
 * sooner. The exams below start and end when the test moves their times (now), not by a clock set
 * at their creation: a window of seconds ran out on a loaded machine before the operator's restart
 * was done, and the checks made inside it then failed (or saw another phase than they meant to).
 */
const quickLease = {
  OPERATOR_LEASE_DURATION: "4s",
  OPERATOR_RENEW_DEADLINE: "3s",
  OPERATOR_RETRY_PERIOD: "500ms",
};

test("an exam closes its class's environments at the start, stops the students' others, survives an operator restart and restores exactly what it changed at the end", async (t) => {
  const ns = await testNamespace(t, "exam");
  const rest = await adminRest();
  const env = { OPERATOR_PROXY_PODS: `${ns}:app.kubernetes.io/component=proxy`, ...quickLease };
  let operator = await startOperator(t, ns, { env });
  await createTemplate(ns, "lab", simpleTemplateSpec());
  await createTemplate(ns, "web", simpleTemplateSpec());
  await userland(ns, "alice-lab", "alice", "lab", false, "c1"); // stopped before: started, then stopped again
  await userland(ns, "bob-lab", "bob", "lab", true, "c1");
  await userland(ns, "carol-lab", "carol", "lab", true, "c2"); // another class: untouched
  await userland(ns, "alice-web", "alice", "web", true); // running: stopped for the window
  await userland(ns, "bob-web", "bob", "web", false); // already stopped: stays so
  await userland(ns, "carol-web", "carol", "web", true); // not a student of the exam
  const get = (name: string) => rest.get<Userland>(userlandsPath(ns, name));

  // An hour ahead: the Scheduled state is seen untouched, however long it takes to see it. The test
  // starts the exam (spec.start now) once it has looked.
  const start = Date.now() + 3_600_000;
  const end = start + 3_600_000;
  await rest.create(examsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Exam",
    metadata: { name: "midterm" },
    spec: {
      templateName: "lab",
      class: "c1",
      start: iso(start),
      end: iso(end),
      proctors: { users: ["prof"] },
    },
  });
  const exam = () => rest.get<Exam>(examsPath(ns, "midterm"));
  await eventually("the exam to be Scheduled", async () => (await exam()).status?.phase === "Scheduled");
  // Within a day of its start, the home page's notice is on the class's exam environments.
  const upcoming = async (name: string) =>
    parseExamNotice((await get(name)).metadata.annotations?.[ExamMarks.upcomingAnnotation]);
  for (const student of ["alice-lab", "bob-lab"]) {
    const n = await upcoming(student);
    assert.deepEqual([n?.exam, n?.namespace, n?.class, n?.start], ["midterm", ns, "c1", iso(start)], student);
  }
  assert.equal(await upcoming("carol-lab"), undefined, "not on another class's");
  assert.equal(await upcoming("alice-web"), undefined, "not on another Template's");
  assert.equal((await get("alice-web")).spec.enabled, true, "nothing stopped before the start");
  await assert.rejects(
    rest.get(policyPath(ns, "userland-exam-midterm")),
    isNotFound,
    "no policy before the start",
  );

  const startedAt = Date.now();
  await rest.patch(examsPath(ns, "midterm"), { spec: { start: iso(startedAt) } });
  await eventually("the exam to run", async () => (await exam()).status?.phase === "Running");
  const policy = await eventually("the exam's NetworkPolicy", () =>
    rest
      .get<{ spec: Record<string, unknown> }>(policyPath(ns, "userland-exam-midterm"))
      .catch(() => undefined),
  );
  assert.deepEqual(policy.spec, {
    podSelector: {
      matchLabels: {
        [LABELS.managedBy]: MANAGED_BY,
        [LABELS.template]: "lab",
        [ExamMarks.examLabel]: "midterm",
      },
    },
    policyTypes: ["Ingress", "Egress"],
    ingress: [
      {
        from: [
          {
            namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": ns } },
            podSelector: { matchLabels: { "app.kubernetes.io/component": "proxy" } },
          },
        ],
      },
    ],
    egress: [
      {
        to: [
          {
            namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } },
            podSelector: { matchLabels: { "k8s-app": "kube-dns" } },
          },
        ],
        ports: [
          { protocol: "UDP", port: 53 },
          { protocol: "TCP", port: 53 },
        ],
      },
    ],
  });
  await eventually("the marks on every Userland", async () => {
    const [a, b, aw, bw] = await Promise.all(["alice-lab", "bob-lab", "alice-web", "bob-web"].map(get));
    return (
      a?.spec.enabled === true &&
      a.metadata.labels?.[ExamMarks.examLabel] === "midterm" &&
      a.metadata.annotations?.[ExamMarks.upcomingAnnotation] === undefined &&
      b?.metadata.annotations?.[ExamMarks.upcomingAnnotation] === undefined &&
      b?.metadata.labels?.[ExamMarks.examLabel] === "midterm" &&
      aw?.spec.enabled === false &&
      aw.metadata.labels?.[ExamMarks.holdLabel] === `${ns}.midterm` &&
      bw?.metadata.labels?.[ExamMarks.holdLabel] === `${ns}.midterm`
    );
  });
  assert.equal((await get("alice-web")).metadata.annotations?.["userland.dev/stopped-reason"], "Exam");
  assert.match((await get("bob-lab")).metadata.annotations?.[ExamMarks.examAnnotation] ?? "", /"prof"/);
  for (const other of ["carol-lab", "carol-web"]) {
    const u = await get(other);
    assert.equal(u.spec.enabled, true, `${other} untouched`);
    assert.deepEqual(
      u.metadata.labels?.[ExamMarks.examLabel] ?? u.metadata.labels?.[ExamMarks.holdLabel],
      undefined,
    );
  }
  assert.deepEqual((await exam()).status?.changed, { enabled: ["alice-lab"], stopped: [`${ns}/alice-web`] });
  // The environment's pods carry the label the policy selects.
  const deployment = await eventually("bob's Deployment with the exam's pod label", async () => {
    const d = await rest.get<V1Deployment>(deploymentsPath(ns, childNames("lab", "bob-lab").deployment));
    return d.spec?.template.metadata?.labels?.[ExamMarks.examLabel] === "midterm" ? d : undefined;
  });
  assert.equal(deployment.spec?.replicas, 1);
  const carolDeployment = await rest.get<V1Deployment>(
    deploymentsPath(ns, childNames("lab", "carol-lab").deployment),
  );
  assert.equal(carolDeployment.spec?.template.metadata?.labels?.[ExamMarks.examLabel], undefined);

  // Mid-exam the operator dies; meanwhile alice starts her other environment and someone deletes
  // the policy. The next operator puts both back and keeps the record it found.
  await operator.stop("SIGKILL");
  await rest.patch(userlandsPath(ns, "alice-web"), { spec: { enabled: true } });
  await rest.delete(policyPath(ns, "userland-exam-midterm"));
  operator = await startOperator(t, ns, { env });
  await eventually("the new operator to converge", async () => {
    const aw = await get("alice-web");
    const p = await rest.get(policyPath(ns, "userland-exam-midterm")).catch(() => undefined);
    return aw.spec.enabled === false && p !== undefined;
  });
  // With the operator running, a deleted policy is written again at its delete event, not at the
  // next resync (10 minutes) nor the exam's end (an hour away).
  await rest.delete(policyPath(ns, "userland-exam-midterm"));
  await eventually("the deleted policy to be written again", async () =>
    rest.get(policyPath(ns, "userland-exam-midterm")).catch(() => undefined),
  );
  const running = await exam();
  assert.equal(running.status?.phase, "Running", "converged inside the window");
  assert.deepEqual(running.status?.changed, { enabled: ["alice-lab"], stopped: [`${ns}/alice-web`] });

  // The end (spec.end now, after the start by a second at least): every mark gone, each Userland
  // as before the start, then the policy.
  await rest.patch(examsPath(ns, "midterm"), {
    spec: { end: iso(Math.max(Date.now(), startedAt + 1000)) },
  });
  await eventually("the exam to be over", async () => (await exam()).status?.phase === "Over");
  await eventually(
    "the policy to be removed",
    async () =>
      (await rest.get(policyPath(ns, "userland-exam-midterm")).catch(() => undefined)) === undefined,
  );
  // And the status says so: a field the restore removed is gone from the status too (a merge patch
  // kept it, and the operator wrote the same status again on every sync).
  await eventually("the status to name no policy", async () => (await exam()).status?.policy === undefined);
  const after = Object.fromEntries(
    await Promise.all(
      ["alice-lab", "bob-lab", "carol-lab", "alice-web", "bob-web", "carol-web"].map(
        async (n) => [n, await get(n)] as const,
      ),
    ),
  );
  assert.deepEqual(
    Object.fromEntries(Object.entries(after).map(([n, u]) => [n, u.spec.enabled])),
    {
      "alice-lab": false,
      "bob-lab": true,
      "carol-lab": true,
      "alice-web": true,
      "bob-web": false,
      "carol-web": true,
    },
    "each Userland as it was before the exam",
  );
  for (const [n, u] of Object.entries(after)) {
    const marks = Object.keys({ ...u.metadata.labels, ...u.metadata.annotations }).filter((k) =>
      k.startsWith("userland.dev/exam"),
    );
    assert.deepEqual(marks, [], `${n} carries no exam mark`);
    assert.equal(
      u.metadata.annotations?.["userland.dev/stopped-reason"],
      undefined,
      `${n}: no stopped-reason`,
    );
  }
  const students = (await exam()).status?.students?.map((s) => [s.user, s.state]);
  assert.deepEqual(students, [
    ["alice", "Done"],
    ["bob", "Done"],
  ]);
  assert.equal(operator.child.exitCode, null);
});

test("an Exam whose end is not after its start, without a class or longer than 24 hours is refused by the API server", async (t) => {
  const ns = await testNamespace(t, "exam-crd");
  const rest = await adminRest();
  await installCrds();
  await assert.rejects(
    rest.create(examsPath(ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Exam",
      metadata: { name: "backwards" },
      spec: { templateName: "lab", class: "*", start: "2030-01-01T10:00:00Z", end: "2030-01-01T09:00:00Z" },
    }),
    /spec.end must be after spec.start/,
  );
  // Issue 41 item 8: a class named on purpose ("*" for the whole Template), and a bounded window.
  await assert.rejects(
    rest.create(examsPath(ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Exam",
      metadata: { name: "everyone" },
      spec: { templateName: "lab", start: "2030-01-01T09:00:00Z", end: "2030-01-01T10:00:00Z" },
    }),
    /spec.class: Required value/,
  );
  await assert.rejects(
    rest.create(examsPath(ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Exam",
      metadata: { name: "days" },
      spec: { templateName: "lab", class: "*", start: "2030-01-01T09:00:00Z", end: "2030-01-02T09:00:01Z" },
    }),
    /an exam lasts at most 24 hours/,
  );
  await rest.create(examsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Exam",
    metadata: { name: "day" },
    spec: { templateName: "lab", class: "*", start: "2030-01-01T09:00:00Z", end: "2030-01-02T09:00:00Z" },
  });
});

test("without OPERATOR_PROXY_PODS an exam does not start: NetworkClosed=False, nothing changed", async (t) => {
  const ns = await testNamespace(t, "exam-noproxy");
  const rest = await adminRest();
  await startOperator(t, ns);
  await createTemplate(ns, "lab", simpleTemplateSpec());
  await userland(ns, "dan-lab", "dan", "lab", false);
  await rest.create(examsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Exam",
    metadata: { name: "quiz" },
    spec: { templateName: "lab", class: "*", start: iso(Date.now() - 1000), end: iso(Date.now() + 60_000) },
  });
  const exam = await eventually("the exam's condition", async () => {
    const e = await rest.get<Exam>(examsPath(ns, "quiz"));
    return e.status?.conditions?.find((c) => c.type === "NetworkClosed") ? e : undefined;
  });
  assert.equal(exam.status?.phase, "Running");
  assert.equal(exam.status?.conditions?.[0]?.reason, "ProxyPodsUnset");
  const dan = await rest.get<Userland>(userlandsPath(ns, "dan-lab"));
  assert.equal(dan.spec.enabled, false, "not started without the network closed");
  assert.equal(dan.metadata.labels?.[ExamMarks.examLabel], undefined);
});

test("an Exam deleted while it runs restores what it changed and takes its policy with it (its finalizer)", async (t) => {
  const ns = await testNamespace(t, "exam-del");
  const rest = await adminRest();
  await startOperator(t, ns, { env: { OPERATOR_PROXY_PODS: `${ns}:app.kubernetes.io/component=proxy` } });
  await createTemplate(ns, "lab", simpleTemplateSpec());
  await createTemplate(ns, "web", simpleTemplateSpec());
  await userland(ns, "eve-lab", "eve", "lab", false);
  await userland(ns, "eve-web", "eve", "web", true);
  await rest.create(examsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Exam",
    metadata: { name: "quiz" },
    spec: {
      templateName: "lab",
      class: "*",
      start: iso(Date.now() - 1000),
      end: iso(Date.now() + 3_600_000),
    },
  });
  await eventually("the exam to run with its marks", async () => {
    const [lab, web] = await Promise.all([
      rest.get<Userland>(userlandsPath(ns, "eve-lab")),
      rest.get<Userland>(userlandsPath(ns, "eve-web")),
    ]);
    return lab.spec.enabled === true && web.spec.enabled === false;
  });
  const exam = await rest.get<Exam>(examsPath(ns, "quiz"));
  assert.deepEqual(exam.metadata.finalizers, [ExamMarks.finalizer]);

  await rest.delete(examsPath(ns, "quiz"));
  await eventually(
    "the exam to be gone",
    async () => (await rest.get(examsPath(ns, "quiz")).catch(() => undefined)) === undefined,
  );
  const [lab, web] = await Promise.all([
    rest.get<Userland>(userlandsPath(ns, "eve-lab")),
    rest.get<Userland>(userlandsPath(ns, "eve-web")),
  ]);
  assert.equal(lab.spec.enabled, false, "stopped again, as before the exam");
  assert.equal(web.spec.enabled, true, "started again");
  assert.equal(lab.metadata.labels?.[ExamMarks.examLabel], undefined);
  assert.equal(web.metadata.labels?.[ExamMarks.holdLabel], undefined);
  await eventually(
    "the policy to be gone",
    async () => (await rest.get(policyPath(ns, "userland-exam-quiz")).catch(() => undefined)) === undefined,
  );
});

test("the exam's pod label comes only from the operator's exam with its network closed: a hand-made label or a Template's own copy opens nothing", async (t) => {
  const ns = await testNamespace(t, "exam-label");
  const rest = await adminRest();
  await startOperator(t, ns, { env: { OPERATOR_PROXY_PODS: `${ns}:app.kubernetes.io/component=proxy` } });
  const spec = simpleTemplateSpec();
  spec.template.metadata = { labels: { [ExamMarks.examLabel]: "from-template", team: "a" } };
  await createTemplate(ns, "lab", spec);
  // The label names no Exam: the pod must stay under the chart's environments policy.
  await rest.create(userlandsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Userland",
    metadata: { name: "fay-lab", labels: { [ExamMarks.examLabel]: "fake" } },
    spec: { user: "fay", templateName: "lab" },
  });
  const deployment = await eventually("fay's Deployment", () =>
    rest
      .get<V1Deployment>(deploymentsPath(ns, childNames("lab", "fay-lab").deployment))
      .catch(() => undefined),
  );
  const labels = deployment.spec?.template.metadata?.labels ?? {};
  assert.equal(labels[ExamMarks.examLabel], undefined, "no exam label on the pods");
  assert.equal(labels.team, "a", "the Template's other labels stay");
});

test("two exams at once over the same environment: the second leaves it to the first and says so, and takes it once the first is gone", async (t) => {
  const ns = await testNamespace(t, "exam-two");
  const rest = await adminRest();
  await startOperator(t, ns, { env: { OPERATOR_PROXY_PODS: `${ns}:app.kubernetes.io/component=proxy` } });
  await createTemplate(ns, "lab", simpleTemplateSpec());
  await userland(ns, "gil-lab", "gil", "lab", true);
  const create = (name: string) =>
    rest.create(examsPath(ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Exam",
      metadata: { name },
      spec: {
        templateName: "lab",
        class: "*",
        start: iso(Date.now() - 1000),
        end: iso(Date.now() + 3_600_000),
      },
    });
  const examLabel = async () =>
    (await rest.get<Userland>(userlandsPath(ns, "gil-lab"))).metadata.labels?.[ExamMarks.examLabel];
  await create("first");
  await eventually("gil's environment in the first exam", async () => (await examLabel()) === "first");
  await create("second");
  const second = await eventually("the second exam to say whose it is", async () => {
    const e = await rest.get<Exam>(examsPath(ns, "second"));
    return e.status?.students?.[0]?.message ? e : undefined;
  });
  assert.match(second.status?.students?.[0]?.message ?? "", /Left to the exam first/);
  assert.equal(await examLabel(), "first", "the first exam's mark stands");
  assert.deepEqual(second.status?.changed, { enabled: [], stopped: [] });

  await rest.delete(examsPath(ns, "first"));
  await eventually("the second exam to take gil's environment", async () => (await examLabel()) === "second");
});

/** The hold label's value for the exam `name` of `ns` (examHoldValue; short names read as "<ns>.<name>"). */
const holdOf = (ns: string, name: string) => `${ns}.${name}`;

test("an exam holds its students' environments in every namespace the release serves, through an operator restart, and gives them back at the end", async (t) => {
  const own = await testNamespace(t, "exam-own");
  const a = await testNamespace(t, "exam-a");
  const b = await testNamespace(t, "exam-b");
  const rest = await adminRest();
  const env = { OPERATOR_PROXY_PODS: `${a}:app.kubernetes.io/component=proxy`, ...quickLease };
  let operator = await startOperatorServing(t, own, [a, b], env);
  await createTemplate(a, "lab", simpleTemplateSpec());
  await createTemplate(b, "web", simpleTemplateSpec());
  await createTemplate(b, "notes", simpleTemplateSpec());
  await userland(a, "ada-lab", "ada", "lab", false);
  await userland(b, "ada-web", "ada", "web", true); // running in another course: stopped for the window
  await userland(b, "ada-notes", "ada", "notes", false); // stopped already: stays so
  await userland(b, "cy-web", "cy", "web", true); // no student of the exam
  const get = (ns: string, name: string) => rest.get<Userland>(userlandsPath(ns, name));

  // Started now, ended by the test (spec.end now) once it has seen the restart's hold.
  const start = Date.now() - 1000;
  await rest.create(examsPath(a), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Exam",
    metadata: { name: "midterm" },
    spec: {
      templateName: "lab",
      class: "*",
      title: "Midterm",
      start: iso(start),
      end: iso(start + 3_600_000),
    },
  });
  const exam = () => rest.get<Exam>(examsPath(a, "midterm"));
  await eventually("the exam to run", async () => (await exam()).status?.phase === "Running");
  await eventually("ada's environment of the other namespace held", async () => {
    const [web, notes] = await Promise.all([get(b, "ada-web"), get(b, "ada-notes")]);
    return (
      web.spec.enabled === false &&
      web.metadata.labels?.[ExamMarks.holdLabel] === holdOf(a, "midterm") &&
      notes.metadata.labels?.[ExamMarks.holdLabel] === holdOf(a, "midterm")
    );
  });
  const web = await get(b, "ada-web");
  assert.equal(web.metadata.annotations?.["userland.dev/stopped-reason"], "Exam");
  const held = JSON.parse(web.metadata.annotations?.[ExamMarks.holdAnnotation] ?? "{}") as ExamNotice;
  assert.deepEqual([held.namespace, held.exam, held.title], [a, "midterm", "Midterm"]);
  assert.equal((await get(b, "ada-notes")).spec.enabled, false);
  const cy = await get(b, "cy-web");
  assert.equal(cy.spec.enabled, true, "another student untouched");
  assert.equal(cy.metadata.labels?.[ExamMarks.holdLabel], undefined);
  assert.deepEqual((await exam()).status?.changed, { enabled: ["ada-lab"], stopped: [`${b}/ada-web`] });

  // The operator dies mid-exam; ada starts her other environment meanwhile: the next one stops it again.
  await operator.stop("SIGKILL");
  await rest.patch(userlandsPath(b, "ada-web"), { spec: { enabled: true } });
  operator = await startOperatorServing(t, own, [a, b], env);
  await eventually(
    "the new operator to hold it again",
    async () => (await get(b, "ada-web")).spec.enabled === false,
  );
  assert.equal((await exam()).status?.phase, "Running", "held again inside the window");

  // The end, seen by the new operator: back as it was, in both namespaces, no mark left.
  await rest.patch(examsPath(a, "midterm"), { spec: { end: iso(Date.now()) } });
  await eventually("the exam to be over", async () => (await exam()).status?.phase === "Over");
  const after = await Promise.all(
    [
      [a, "ada-lab"],
      [b, "ada-web"],
      [b, "ada-notes"],
      [b, "cy-web"],
    ].map(async ([ns, n]) => [n, await get(ns ?? "", n ?? "")] as const),
  );
  assert.deepEqual(
    Object.fromEntries(after.map(([n, u]) => [n, u.spec.enabled])),
    { "ada-lab": false, "ada-web": true, "ada-notes": false, "cy-web": true },
    "each Userland as it was before the exam",
  );
  for (const [n, u] of after) {
    const marks = Object.keys({ ...u.metadata.labels, ...u.metadata.annotations }).filter(
      (k) => k.startsWith("userland.dev/exam") || k === "userland.dev/stopped-reason",
    );
    assert.deepEqual(marks, [], `${n} carries no exam mark`);
  }
  assert.equal(operator.child.exitCode, null);
});

test("two exams of the same name in two namespaces: each holds its own students' other environments, and one deleted gives back only its own", async (t) => {
  const own = await testNamespace(t, "exam-own");
  const a = await testNamespace(t, "exam-a");
  const b = await testNamespace(t, "exam-b");
  const rest = await adminRest();
  const env = { OPERATOR_PROXY_PODS: `${a}:app.kubernetes.io/component=proxy` };
  await startOperatorServing(t, own, [a, b], env);
  for (const ns of [a, b]) {
    await createTemplate(ns, "lab", simpleTemplateSpec());
    await createTemplate(ns, "web", simpleTemplateSpec());
  }
  await userland(a, "ada-lab", "ada", "lab", true); // in a's exam
  await userland(b, "ada-web", "ada", "web", true); // held by a's exam
  await userland(b, "bob-lab", "bob", "lab", true); // in b's exam
  await userland(a, "bob-web", "bob", "web", true); // held by b's exam
  const get = (ns: string, name: string) => rest.get<Userland>(userlandsPath(ns, name));
  for (const ns of [a, b])
    await rest.create(examsPath(ns), {
      apiVersion: "userland.dev/v1alpha1",
      kind: "Exam",
      metadata: { name: "midterm" },
      spec: {
        templateName: "lab",
        class: "*",
        start: iso(Date.now() - 1000),
        end: iso(Date.now() + 3_600_000),
      },
    });
  const marks = async () => {
    const [adaLab, adaWeb, bobLab, bobWeb] = await Promise.all([
      get(a, "ada-lab"),
      get(b, "ada-web"),
      get(b, "bob-lab"),
      get(a, "bob-web"),
    ]);
    const of = (u: Userland) => [
      u.metadata.labels?.[ExamMarks.examLabel] ?? u.metadata.labels?.[ExamMarks.holdLabel],
      u.spec.enabled,
    ];
    return { adaLab: of(adaLab), adaWeb: of(adaWeb), bobLab: of(bobLab), bobWeb: of(bobWeb) };
  };
  const both = {
    adaLab: ["midterm", true],
    adaWeb: [holdOf(a, "midterm"), false],
    bobLab: ["midterm", true],
    bobWeb: [holdOf(b, "midterm"), false],
  };
  await eventually(
    "both exams to hold their own",
    async () => stableJson(await marks()) === stableJson(both),
  );
  for (const ns of [a, b]) {
    const e = await rest.get<Exam>(examsPath(ns, "midterm"));
    assert.equal(e.status?.students?.[0]?.message, undefined, `${ns}'s exam leaves nothing to the other`);
  }

  // b's exam deleted: bob's environments come back; ada's stay as a's exam holds them.
  await rest.delete(examsPath(b, "midterm"));
  await eventually(
    "b's exam to be gone",
    async () => (await rest.get(examsPath(b, "midterm")).catch(() => undefined)) === undefined,
  );
  assert.deepEqual(await marks(), {
    adaLab: ["midterm", true],
    adaWeb: [holdOf(a, "midterm"), false],
    bobLab: [undefined, true],
    bobWeb: [undefined, true],
  });
  await rest.delete(examsPath(a, "midterm"));
  await eventually(
    "a's exam to be gone",
    async () => (await rest.get(examsPath(a, "midterm")).catch(() => undefined)) === undefined,
  );
  assert.deepEqual(await marks(), {
    adaLab: [undefined, true],
    adaWeb: [undefined, true],
    bobLab: [undefined, true],
    bobWeb: [undefined, true],
  });
});

test("an exam is announced on its students' environments in the day before its start: not earlier, moved with it, gone with it", async (t) => {
  const ns = await testNamespace(t, "exam-ahead");
  const rest = await adminRest();
  await startOperator(t, ns, { env: { OPERATOR_PROXY_PODS: `${ns}:app.kubernetes.io/component=proxy` } });
  await createTemplate(ns, "lab", simpleTemplateSpec());
  await userland(ns, "hal-lab", "hal", "lab", false, "c1");
  await userland(ns, "ivy-lab", "ivy", "lab", false, "c2");
  const hour = 3_600_000;
  const at = (fromNow: number) => ({
    start: iso(Date.now() + fromNow),
    end: iso(Date.now() + fromNow + 2 * hour),
  });
  const far = at(30 * hour);
  await rest.create(examsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Exam",
    metadata: { name: "final" },
    spec: { templateName: "lab", class: "c1", title: "Final", ...far },
  });
  const notice = async (name: string) =>
    parseExamNotice(
      (await rest.get<Userland>(userlandsPath(ns, name))).metadata.annotations?.[
        ExamMarks.upcomingAnnotation
      ],
    );
  await eventually(
    "the exam to be Scheduled",
    async () => (await rest.get<Exam>(examsPath(ns, "final"))).status?.phase === "Scheduled",
  );
  assert.equal(await notice("hal-lab"), undefined, "not announced 30 hours ahead");

  const soon = at(2 * hour);
  await rest.patch(examsPath(ns, "final"), { spec: soon });
  const shown = await eventually("the notice 2 hours ahead", () => notice("hal-lab"));
  assert.deepEqual(shown, {
    exam: "final",
    namespace: ns,
    title: "Final",
    class: "c1",
    start: soon.start,
    end: soon.end,
    proctors: { users: [], groups: [] },
  });
  assert.equal(await notice("ivy-lab"), undefined, "not on another class's");

  await rest.patch(examsPath(ns, "final"), { spec: far });
  await eventually(
    "the notice gone when the exam moves later",
    async () => (await notice("hal-lab")) === undefined,
  );
  await rest.patch(examsPath(ns, "final"), { spec: soon });
  await eventually("the notice back", () => notice("hal-lab"));
  await rest.delete(examsPath(ns, "final"));
  await eventually(
    "the exam gone",
    async () => (await rest.get(examsPath(ns, "final")).catch(() => undefined)) === undefined,
  );
  assert.equal(await notice("hal-lab"), undefined, "taken off before the exam goes");
});
