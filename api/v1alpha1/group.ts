/** The API group and version of the Template and Userland custom resources. */
import type { V1ObjectMeta } from "@kubernetes/client-node";

export const GROUP = "userland.dev";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;

/** An object of one of this group's kinds, as the API server stores it. */
export interface CustomObject<Kind extends string, Spec, Status> {
  apiVersion: typeof API_VERSION;
  kind: Kind;
  metadata: V1ObjectMeta;
  spec: Spec;
  status?: Status;
}
