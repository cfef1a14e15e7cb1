/**
 * Who an existing object with a child's name belongs to, and so whether a Userland may take it
 * over. "Provably this Userland's" (docs/decisions/0002-operator.md, "Taking over existing
 * objects") is one of:
 * - its controller is this Userland (same UID), e.g. a claim whose labels were edited away;
 * - its controller is an ESC (esc.k06.in) Userland of the same name in the same namespace (owner
 *   references never cross namespaces), and this Userland's user is that name: ESC's Userland
 *   name was its user, so both are the same identity. This is the migration from ESC.
 * Anything else (no owner, another owner, an ESC Userland for another identity) is someone else's.
 */
import type { V1OwnerReference } from "@kubernetes/client-node";
import { API_VERSION, type Userland } from "../api/v1alpha1/index.ts";
import type { k8s } from "../lib/kube.ts";

/** koba1t/ESC's API group: its Userlands have no user field, their name is the user. */
const ESC_GROUP = "esc.k06.in";

const controllerOf = (object: k8s.KubernetesObject): V1OwnerReference | undefined =>
  object.metadata?.ownerReferences?.find((r) => r.controller === true);

export function isControlledBy(object: k8s.KubernetesObject, userland: Userland): boolean {
  return controllerOf(object)?.uid === userland.metadata.uid;
}

/** The ESC Userland that controls `object` when it is this Userland's predecessor (same name, same user). */
export function escPredecessor(
  object: k8s.KubernetesObject,
  userland: Userland,
): V1OwnerReference | undefined {
  const owner = controllerOf(object);
  if (!owner || owner.kind !== "Userland" || owner.apiVersion.split("/")[0] !== ESC_GROUP) return undefined;
  const name = userland.metadata.name;
  return owner.name === name && userland.spec.user === name ? owner : undefined;
}

/**
 * The owner reference making one of the platform's objects (`kind`) the controller of a child,
 * which the garbage collector deletes with it.
 */
export function controllerReference(
  kind: "Userland" | "Template" | "Assignment" | "Submission" | "Archive" | "ClassArchive" | "Exam",
  owner: { metadata: { name?: string; uid?: string } },
  options: { blockOwnerDeletion?: boolean } = {},
): V1OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind,
    name: owner.metadata.name ?? "",
    uid: owner.metadata.uid ?? "",
    controller: true,
    ...(options.blockOwnerDeletion ? { blockOwnerDeletion: true } : {}),
  };
}
