/**
 * What a test needs from the shared control plane started by test/run.ts: an admin client,
 * a namespace of its own (deleted afterwards), identities with real ServiceAccount tokens, and
 * the audit log to count requests. A test run without a reachable control plane fails loudly.
 */
import { randomBytes } from "node:crypto";
import type { TestContext } from "node:test";
import { inspect } from "node:util";
import { k8s } from "../../lib/kube.ts";
import type { ControlPlane } from "../../cluster/controlPlane.ts";
import { examsPath, type Exam } from "../../api/v1alpha1/index.ts";
import { KubeRest } from "../../lib/kubeRest.ts";
import {
  CLUSTER_INFO_ENV,
  connect,
  requestServiceAccountToken,
  type ClusterAccess,
} from "../../cluster/harness/connect.ts";
import {
  privateControlPlane as newPrivateControlPlane,
  startAndConnect,
} from "../../cluster/harness/privateControlPlane.ts";

/** The tests' name for a connection to a control plane. */
export type TestCluster = ClusterAccess;

let cached: Promise<TestCluster> | undefined;

/** Connects to the control plane of this test run; rejects with a clear message when there is none. */
export function testCluster(): Promise<TestCluster> {
  cached ??= connect(process.env[CLUSTER_INFO_ENV]);
  return cached;
}

/** A fresh namespace for one test, deleted when the test ends. */
export async function testNamespace(t: TestContext, prefix = "t", cluster?: TestCluster): Promise<string> {
  const { kc } = cluster ?? (await testCluster());
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const name = `${prefix}-${randomBytes(4).toString("hex")}`;
  await core.createNamespace({ body: { metadata: { name, labels: { "userland.dev/test": "true" } } } });
  t.after(async () => {
    await releaseFinalizers(kc, name).catch(() => undefined);
    await core.deleteNamespace({ name }).catch(() => undefined);
  });
  return name;
}

/**
 * Lets a test's namespace go once its operator has stopped: an Exam keeps the operator's finalizer
 * until the operator has restored its students, and with no operator left it never went, so the
 * namespace stayed Terminating and the namespace controller listed and emptied its ~50 kinds again
 * and again for the rest of the run (a warm run's audit log: 30,000 of its 114,000 requests, five
 * exam tests' namespaces). Each Exam is deleted first (so an operator still running does not put
 * the finalizer back: it adds it only to an Exam that is not being deleted), then released.
 */
async function releaseFinalizers(kc: TestCluster["kc"], namespace: string): Promise<void> {
  const rest = new KubeRest(kc, "userland-tests");
  try {
    for (const exam of (await rest.list<Exam>(examsPath(namespace))).items) {
      const path = examsPath(namespace, exam.metadata.name);
      await rest.delete(path).catch(() => undefined);
      await rest.patch(path, { metadata: { finalizers: null } }).catch(() => undefined);
    }
  } finally {
    await rest.close();
  }
}

/** A real token for a ServiceAccount (created if missing), from the TokenRequest API. */
export async function serviceAccountToken(
  namespace: string,
  name: string,
  cluster?: TestCluster,
): Promise<string> {
  return requestServiceAccountToken(cluster ?? (await testCluster()), namespace, name);
}

/**
 * Polls `check` until it returns a value other than undefined/false. When the time runs out it
 * fails with what the last tries said, not with a bare timeout: the error the last throwing try
 * threw (the same error, so an assertion keeps its diff), its message prefixed with `what`, the
 * number of tries and the time; or, when no try threw, a timeout saying what the last try returned.
 */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  intervalMs = 100,
): Promise<T> {
  const started = Date.now();
  let tries = 0;
  let lastError: unknown;
  for (;;) {
    tries++;
    let last: LastTry;
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
      last = { threw: false, returned: value === false ? false : undefined };
    } catch (error) {
      lastError = error;
      last = { threw: true };
    }
    const elapsed = Date.now() - started;
    if (elapsed > timeoutMs)
      throw notYet(
        `${what}: not so after ${tries} ${tries === 1 ? "try" : "tries"} in ${elapsed} ms`,
        last,
        lastError,
      );
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

type LastTry = { threw: true } | { threw: false; returned: undefined | false };

/** The error `eventually` fails with (see there). */
function notYet(tried: string, last: LastTry, error: unknown): Error {
  const returned = last.threw ? "" : `; the last try returned ${String(last.returned)}`;
  if (!(error instanceof Error)) {
    const threw = error === undefined ? "" : `; a try threw ${inspect(error)}`;
    return new Error(`timed out: ${tried}${returned}${threw}`);
  }
  const original = error.message;
  error.message = `${tried}${returned}; ${last.threw ? "the last try" : "an earlier try"} threw: ${original}`;
  if (error.stack?.includes(original)) error.stack = error.stack.replace(original, error.message);
  return error;
}

/**
 * A control plane of the test's own, stopped when the test ends: for tests that restart
 * kube-apiserver, which would break every test running beside them on the shared one.
 */
export async function privateControlPlane(
  t: TestContext,
  prefix: string,
): Promise<{ controlPlane: ControlPlane; cluster: TestCluster }> {
  const controlPlane = newPrivateControlPlane(`${prefix}-${randomBytes(3).toString("hex")}`, { nodes: 1 });
  t.after(() => controlPlane.stop());
  const { cluster } = await startAndConnect(controlPlane);
  return { controlPlane, cluster };
}
