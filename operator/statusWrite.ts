/**
 * How the operator writes every status it computes: whole, and only when it differs.
 */
import type { KubeRest } from "../lib/kubeRest.ts";
import { stableJson } from "./compare.ts";

/**
 * Writes `status` as the object's whole status unless the cached `previous` already equals it. A
 * plain merge patch would keep every field the new status leaves out (a stopped Userland's
 * `progress`, an Exam's `policy` once restored): the server's status would then differ from the
 * computed one for good, and every later sync would write again. Without `resourceVersion`: a JSON
 * patch adding /status (replacing it). With it (a write that must not overwrite a status it did not
 * read, e.g. an Exam's record of what it changed): a merge patch on that resourceVersion (409 when
 * it moved on) that removes what `previous` had and `status` has not. Returns whether it wrote.
 */
export async function writeStatus(
  rest: KubeRest,
  path: string,
  previous: unknown,
  status: object,
  resourceVersion?: string,
): Promise<boolean> {
  if (stableJson(previous ?? {}) === stableJson(status)) return false;
  if (resourceVersion === undefined)
    await rest.patch(path, [{ op: "add", path: "/status", value: status }], "json");
  else await rest.patch(path, { metadata: { resourceVersion }, status: replacing(previous, status) });
  return true;
}

/** `next` as a merge patch over `previous` (RFC 7386): every key `previous` has and `next` lacks is null. */
function replacing(previous: unknown, next: unknown): unknown {
  if (!isObject(previous) || !isObject(next)) return next;
  const patch: Record<string, unknown> = {};
  for (const key of Object.keys(previous)) if (!(key in next) || next[key] === undefined) patch[key] = null;
  for (const [key, value] of Object.entries(next))
    if (value !== undefined) patch[key] = replacing(previous[key], value);
  return patch;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
