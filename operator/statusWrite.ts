/**
 * How the operator writes every status it computes: whole, and only when it differs.
 */
import type { KubeRest } from "../lib/kubeRest.ts";
import { stableJson } from "./compare.ts";

/**
 * Writes `status` as the object's whole status (a JSON patch adding /status replaces it) unless the
 * cached `previous` already equals it. A merge patch would keep every field the new status leaves
 * out (a stopped Userland's `progress`, a Submission's cleared `failedCopies`): the server's status
 * would then differ from the computed one for good, and every later sync would write again.
 * Returns whether it wrote.
 */
export async function writeStatus(
  rest: KubeRest,
  path: string,
  previous: unknown,
  status: object,
): Promise<boolean> {
  if (stableJson(previous ?? {}) === stableJson(status)) return false;
  await rest.patch(path, [{ op: "add", path: "/status", value: status }], "json");
  return true;
}
