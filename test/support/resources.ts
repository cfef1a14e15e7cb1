/** Templates, Userlands and their children as plain JSON, through the admin client. */
import type { V1Deployment, V1PersistentVolumeClaim, V1Service } from "@kubernetes/client-node";
import type { Template, TemplateSpec, Userland } from "../../api/v1alpha1/index.ts";
import { KubeRest, paths } from "../../lib/kubeRest.ts";
import { isNotFound } from "../../lib/kube.ts";
import { eventually, testCluster } from "./cluster.ts";
import { templatesPath, userlandsPath } from "../../api/v1alpha1/index.ts";

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

/** A minimal Template: one container on port 8080, no volumes. */
export function simpleTemplateSpec(
  image = "registry.invalid/ide:1",
  extra: Partial<TemplateSpec> = {},
): TemplateSpec {
  return {
    displayName: "Test IDE",
    template: {
      spec: { containers: [{ name: "ide", image, ports: [{ containerPort: 8080, name: "http" }] }] },
    },
    service: { ports: [{ name: "http", port: 80, targetPort: 8080 }] },
    ...extra,
  };
}

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

export async function tryGet<T>(path: string): Promise<T | undefined> {
  try {
    return await (await adminRest()).get<T>(path);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

export const getDeployment = async (ns: string, name: string) =>
  tryGet<V1Deployment>(deploymentsPath(ns, name));
export const getService = async (ns: string, name: string) => tryGet<V1Service>(servicesPath(ns, name));
export const getPvc = async (ns: string, name: string) => tryGet<V1PersistentVolumeClaim>(pvcsPath(ns, name));

export interface AuditEvent {
  verb: string;
  user: { username: string };
  objectRef?: {
    resource?: string;
    namespace?: string;
    name?: string;
    subresource?: string;
    apiGroup?: string;
  };
  requestURI: string;
  stageTimestamp: string;
}

/** The API server's audit log entries for `username` (audit log is written in batches of ≤ 1 s). */
export async function auditEvents(username: string, since: Date): Promise<AuditEvent[]> {
  const { readFileSync } = await import("node:fs");
  const { info } = await testCluster();
  return readFileSync(info.auditLog, "utf8")
    .split("\n")
    .filter((line) => line.includes(username))
    .map((line) => JSON.parse(line) as AuditEvent)
    .filter((e) => e.user.username === username && Date.parse(e.stageTimestamp) >= since.getTime());
}

export const WRITE_VERBS = new Set(["create", "update", "patch", "delete", "deletecollection"]);
