/**
 * Deciding whether a child object needs a write. The API server adds defaults and normalises
 * quantities, so "desired equals actual" is never literally true; instead:
 * - every object the operator writes carries a hash of what it meant to write (template or
 *   Userland changes, including removed fields, change the hash), and
 * - every field the operator sets must still hold its value (a hand edit of a managed field is
 *   found and reverted). Fields the operator does not set are left to others.
 */
import { createHash } from "node:crypto";

export function desiredHash(value: unknown): string {
  return createHash("sha256").update(stableJson(value)).digest("hex").slice(0, 16);
}

/** JSON with object keys sorted, so equal values hash equally. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** Maps that must match exactly: an extra key in a selector changes which pods get traffic. */
const EXACT_KEYS = new Set(["selector", "matchLabels"]);

/**
 * True when every value in `desired` is present and equal in `actual`. Arrays must have the same
 * length (a removed list entry is a difference); maps may have extra keys in `actual`, except
 * selectors.
 */
export function isSubset(desired: unknown, actual: unknown, key = ""): boolean {
  if (EXACT_KEYS.has(key) && desired !== undefined) {
    return isSubset(desired, actual) && isSubset(actual, desired);
  }
  if (desired === undefined) return true;
  if (Array.isArray(desired)) {
    return (
      Array.isArray(actual) &&
      actual.length === desired.length &&
      desired.every((d, i) => isSubset(d, actual[i]))
    );
  }
  if (desired && typeof desired === "object") {
    if (!actual || typeof actual !== "object" || Array.isArray(actual)) return false;
    const a = actual as Record<string, unknown>;
    return Object.entries(desired).every(([k, v]) => isSubset(v, a[k], k));
  }
  if (desired === actual) return true;
  // Quantities come back normalised ("0.5" → "500m", "1024Mi" → "1Gi").
  const dq = parseQuantity(desired);
  const aq = parseQuantity(actual);
  return dq !== undefined && aq !== undefined && Math.abs(dq - aq) <= Math.abs(dq) * 1e-12;
}

const SUFFIXES: Record<string, number> = {
  "": 1,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** A Kubernetes resource quantity as a number, or undefined if `value` is not one. */
export function parseQuantity(value: unknown): number | undefined {
  if (typeof value === "number") return value;
  if (typeof value !== "string") return undefined;
  const m = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$/.exec(
    value,
  );
  if (!m) return undefined;
  const base = Number(m[1] + (m[2] ?? ""));
  return base * (SUFFIXES[m[3] ?? ""] ?? 1);
}
