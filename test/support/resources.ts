/** Templates, Userlands and their children as plain JSON, through the admin client. */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import type { V1Deployment, V1PersistentVolumeClaim, V1Pod, V1Service } from "@kubernetes/client-node";
import type { Assignment, Template, TemplateSpec, Userland } from "../../api/v1alpha1/index.ts";
import { paths } from "../../api/kubePaths.ts";
import { groupsPatch, sessionRecordName, type SessionRecord } from "../../api/sessions.ts";
import { changeSessionRecord } from "../../services/user-manager/sessionRecordWriter.ts";
import { sessionRecordsPath } from "../../lib/sessionRecords.ts";
import { LABELS } from "../../api/naming.ts";
import { KubeRest, isNotFound } from "../../lib/kubeRest.ts";
import type { AuditEvent } from "../../cluster/harness/auditLog.ts";
import { eventually, testCluster } from "./cluster.ts";
import { assignmentsPath, templatesPath, userlandsPath } from "../../api/v1alpha1/index.ts";

let restClient: KubeRest | undefined;
export async function adminRest(): Promise<KubeRest> {
  restClient ??= new KubeRest((await testCluster()).kc, "userland-tests");
  return restClient;
}

export { templatesPath, userlandsPath } from "../../api/v1alpha1/index.ts";
export const deploymentsPath = (ns: string, name?: string) =>
  paths.namespaced("apps", "v1", "deployments", ns, name);
export const servicesPath = (ns: string, name?: string) => paths.namespaced("", "v1", "services", ns, name);
export const pvcsPath = (ns: string, name?: string) =>
  paths.namespaced("", "v1", "persistentvolumeclaims", ns, name);

export { simpleTemplateSpec } from "../../cluster/harness/simpleTemplate.ts";

export async function createTemplate(ns: string, name: string, spec: TemplateSpec): Promise<Template> {
  const rest = await adminRest();
  return rest.create<Template>(templatesPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Template",
    metadata: { name },
    spec,
  });
}

export async function createUserland(
  ns: string,
  name: string,
  user: string,
  templateName: string,
  enabled?: boolean,
): Promise<Userland> {
  const rest = await adminRest();
  return rest.create<Userland>(userlandsPath(ns), {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Userland",
    metadata: { name },
    spec: { user, templateName, ...(enabled === undefined ? {} : { enabled }) },
  });
}

/**
 * kwok's claims never bind, so the scheduler leaves a student's environment unplaced ("unbound
 * immediate PersistentVolumeClaims"): this places its pod on a node as the scheduler would
 * (pods/binding), once the pod exists, and says which node.
 */
export async function placeEnvironmentPod(ns: string, deployment: string): Promise<string> {
  const rest = await adminRest();
  const pod = await eventually(`the pod of ${deployment}`, async () => {
    const list = await rest.list<V1Pod>(paths.namespaced("", "v1", "pods", ns), {
      query: { labelSelector: `${LABELS.instance}=${deployment}` },
    });
    return list.items[0];
  });
  const node = (await rest.list<{ metadata: { name: string } }>("/api/v1/nodes")).items[0]?.metadata.name;
  assert.ok(node, "the control plane has a node");
  const name = pod.metadata?.name;
  await rest.create(paths.namespaced("", "v1", "pods", ns, name, "binding"), {
    apiVersion: "v1",
    kind: "Binding",
    metadata: { name },
    target: { apiVersion: "v1", kind: "Node", name: node },
  });
  return node;
}

export async function getUserland(ns: string, name: string): Promise<Userland> {
  return (await adminRest()).get<Userland>(userlandsPath(ns, name));
}

export async function patchUserland(ns: string, name: string, patch: unknown): Promise<Userland> {
  return (await adminRest()).patch<Userland>(userlandsPath(ns, name), patch);
}

/**
 * Writes the status the operator would write for a Ready Userland whose Service is `service`, for
 * tests that run the proxy without the operator (their resolver maps the Service to loopback).
 */
export async function markReady(
  ns: string,
  name: string,
  service: { name: string; port: number },
): Promise<Userland> {
  return (await adminRest()).patch<Userland>(userlandsPath(ns, name, "status"), {
    status: { phase: "Ready", service },
  });
}

export async function patchTemplate(ns: string, name: string, patch: unknown): Promise<Template> {
  return (await adminRest()).patch<Template>(templatesPath(ns, name), patch);
}

export async function waitForPhase(
  ns: string,
  name: string,
  phase: string,
  timeoutMs = 30_000,
): Promise<Userland> {
  return eventually(
    `Userland ${name} to be ${phase}`,
    async () => {
      const u = await getUserland(ns, name);
      return u.status?.phase === phase && u.status.observedGeneration === u.metadata.generation
        ? u
        : undefined;
    },
    timeoutMs,
  );
}

/**
 * An Assignment's folder in its Template's collection (handins/, feedback/, grades/, …), once its
 * first sync chose it: `<name>-<start of its uid>`, bound to this Assignment, not to its name.
 */
export async function collectionFolder(ns: string, name: string): Promise<string> {
  const rest = await adminRest();
  const a = await eventually(`${name}'s collection folder`, async () => {
    const found = await rest.get<Assignment>(assignmentsPath(ns, name));
    return found.status?.collectionFolder !== undefined && found;
  });
  const folder = a.status?.collectionFolder ?? "";
  assert.match(folder, new RegExp(`^${name}-[0-9a-f]{8}$`));
  assert.ok(a.metadata.uid?.replaceAll("-", "").startsWith(folder.slice(name.length + 1)), "the uid's start");
  return folder;
}

export async function tryGet<T>(path: string): Promise<T | undefined> {
  try {
    return await (await adminRest()).get<T>(path);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** `user`'s session record in `ns` (api/sessions.ts), as the user-manager wrote it; undefined: none. */
export const getSessionRecord = async (ns: string, user: string) =>
  tryGet<SessionRecord>(sessionRecordsPath(ns, sessionRecordName(user)));
/** Records `groups` in `user`'s session record, as the user-manager does at each sign-in. */
export async function recordSessionGroups(ns: string, user: string, groups: string[]): Promise<void> {
  await changeSessionRecord(await adminRest(), ns, user, (annotations) => groupsPatch(annotations, groups));
}

export const getDeployment = async (ns: string, name: string) =>
  tryGet<V1Deployment>(deploymentsPath(ns, name));
export const getService = async (ns: string, name: string) => tryGet<V1Service>(servicesPath(ns, name));
export const getPvc = async (ns: string, name: string) => tryGet<V1PersistentVolumeClaim>(pvcsPath(ns, name));

/**
 * The API server's audit log entries for `username` since `since`. The log is written in batches (up
 * to 1 s late): before asserting that something is NOT there, call `auditLogCaughtUp`.
 */
export async function auditEvents(username: string, since: Date): Promise<AuditEvent[]> {
  const { info } = await testCluster();
  return auditLines(info.auditLog)
    .filter((line) => line.includes(username))
    .map((line) => JSON.parse(line) as AuditEvent)
    .filter((e) => e.user.username === username && Date.parse(e.stageTimestamp) >= since.getTime());
}

/** The audit log's complete lines (a batch may be half written as we read). */
function auditLines(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return text.slice(0, text.lastIndexOf("\n") + 1).split("\n");
}

/**
 * Returns once the audit log holds every request the API server answered before this call: it
 * asks for an object of a name nobody else uses and waits for that request in the log. The batch
 * backend queues events in the order the requests completed and hands each batch (≤ 1 s or 400
 * events) to the file in turn, so everything earlier is written by then. `auditLog`: the log's
 * path (default: the test cluster's).
 */
export async function auditLogCaughtUp(auditLog?: string): Promise<void> {
  const file = auditLog ?? (await testCluster()).info.auditLog;
  const marker = `audit-marker-${randomUUID()}`;
  const path = paths.namespaced("", "v1", "configmaps", "default", marker);
  assert.equal(await tryGet(path), undefined, "the marker names no object");
  await eventually(
    `the audit log to record the marker request ${marker}`,
    () => auditLines(file).some((line) => line.includes(marker)),
    30_000,
    50,
  );
}
