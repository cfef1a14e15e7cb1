/** What a Userland means for its student right now, read from its spec and status. */
import type { Userland } from "../../../api/v1alpha1/index.ts";
import type { EnvironmentInfo } from "../pages/environmentPages.ts";
import type { ClusterView } from "./userlandIndex.ts";

export type EnvironmentState = "missing" | "ready" | "starting" | "stopped" | "failed";

export function environmentState(userland: Userland | undefined): EnvironmentState {
  if (!userland || userland.metadata.deletionTimestamp) return "missing";
  if (userland.spec.enabled === false) return "stopped";
  const status = userland.status;
  // A status written for an older spec (e.g. before a Template switch) may name an old Service.
  const current =
    status?.observedGeneration === undefined || status.observedGeneration === userland.metadata.generation;
  if (status?.phase === "Ready" && status.service && current) return "ready";
  if (status?.phase === "Failed" && current) return "failed";
  return "starting";
}

/** What the pages say about an environment: its Template's display name, the user. */
export function environmentInfo(cluster: ClusterView, template: string, user: string): EnvironmentInfo {
  return { template, user, title: cluster.getTemplate(template)?.spec.displayName ?? template };
}
