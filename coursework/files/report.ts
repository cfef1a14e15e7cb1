/**
 * A result as JSON that fits a pod's termination message (Kubernetes keeps at most 4096 bytes): the
 * longest lists are cut from their end and `omitted` says how many entries each lost, so counts stay
 * true. The whole result goes to stdout; this shortened one to /dev/termination-log.
 */
import { existsSync, writeFileSync } from "node:fs";

export const TERMINATION_MESSAGE_BYTES = 4096;

export function fitJson(value: object, maxBytes = TERMINATION_MESSAGE_BYTES): string {
  const copy: Record<string, unknown> = { ...value };
  const omitted: Record<string, number> = {};
  let text = JSON.stringify(copy);
  while (Buffer.byteLength(text) > maxBytes) {
    const longest = Object.entries(copy)
      .filter((entry): entry is [string, unknown[]] => Array.isArray(entry[1]) && entry[1].length > 0)
      .sort((a, b) => b[1].length - a[1].length)[0];
    if (!longest) break;
    const [key, list] = longest;
    // An eighth at a time keeps long lists fast and cuts at most an eighth more than needed.
    const remove = Math.ceil(list.length / 8);
    copy[key] = list.slice(0, list.length - remove);
    omitted[key] = (omitted[key] ?? 0) + remove;
    text = JSON.stringify({ ...copy, omitted });
  }
  if (Buffer.byteLength(text) > maxBytes) {
    // Only long strings are left (never in our results, whose paths are bounded): keep valid JSON.
    text = JSON.stringify({ truncated: true, start: text.slice(0, maxBytes / 4) });
  }
  return text;
}

/** Writes `result`, shortened, where Kubernetes reads a container's termination message, when that file exists. */
export function writeTerminationLog(path: string, result: object): void {
  if (existsSync(path)) writeFileSync(path, fitJson(result));
}
