/**
 * Names and labels of everything the platform creates. User identities are arbitrary strings and
 * Kubernetes names are DNS labels, so a readable slug alone would let "Koba1t" and "koba1t" (or
 * "a.b" and "a-b") share an environment. Every generated name therefore ends in a hash of the exact
 * identity, and routing never derives a name: it looks Userlands up by spec.user.
 */
import { createHash } from "node:crypto";

export const LABELS = {
  managedBy: "app.kubernetes.io/managed-by",
  /** The Userland that owns a child (its name, shortened with a hash if longer than a label value). */
  userland: "userland.dev/userland",
  template: "userland.dev/template",
  /** Selects a Userland's pods; unique per Userland and Template. */
  instance: "userland.dev/instance",
  volume: "userland.dev/volume",
  /** A hash of spec.user on each PVC: a claim is never mounted for a different identity. */
  userHash: "userland.dev/user-hash",
} as const;

/** Annotations on the children the operator creates. */
export const ANNOTATIONS = {
  /** The exact Userland name on every child (label values are limited to 63 characters). */
  userlandName: "userland.dev/userland-name",
  /** A hash of what the operator last wrote; a child whose hash differs is rewritten. */
  desiredHash: "userland.dev/desired-hash",
} as const;

export const MANAGED_BY = "userland-operator";

const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";

/** A lowercase base32 hash of `input`, `length` characters (5 bits each). */
export function shortHash(input: string, length = 10): string {
  const digest = createHash("sha256").update(input, "utf8").digest();
  let out = "";
  for (let i = 0; out.length < length; i++) {
    // Take 5 bits at bit offset i*5.
    const bit = i * 5;
    const byte = bit >> 3;
    const word = ((digest[byte] ?? 0) << 8) | (digest[byte + 1] ?? 0);
    out += BASE32[(word >> (11 - (bit & 7))) & 31];
  }
  return out;
}

/** Lowercase letters and digits of `s`, other runs as one "-", trimmed to `max` characters. */
export function slug(s: string, max: number): string {
  const cleaned = s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, max)
    .replace(/-+$/g, "");
  return cleaned;
}

/**
 * The Userland name for an identity: a readable slug plus a hash of the exact identity, e.g.
 * "Koba1t" → "koba1t-5x2k…", "koba1t" → "koba1t-q7ma…". Always a DNS-1035 label of at most 31
 * characters, so child names stay within Kubernetes' 63-character limit.
 */
export function userlandNameFor(user: string): string {
  const readable = slug(user, 20);
  const prefix = /^[a-z]/.test(readable) ? readable : `u-${readable}`.slice(0, 20).replace(/-+$/g, "");
  return `${prefix}-${shortHash(user)}`;
}

/** A name of at most `max` characters: `name` itself, or its start plus a hash of all of it. */
export function fitName(name: string, max = 63): string {
  if (name.length <= max) return name;
  const hash = shortHash(name);
  return `${name.slice(0, max - hash.length - 1).replace(/-+$/g, "")}-${hash}`;
}

export interface ChildNames {
  /** `<template>-<userland>`: the Deployment, and the pod selector value. */
  deployment: string;
  /** `<template>-<userland>-svc`. */
  service: string;
  /** `<template>-<userland>-pvc-<volume>`. */
  pvc: (volume: string) => string;
  /** The Userland name as a label value. */
  userlandLabel: string;
}

/** The ESC naming scheme, shortened with a hash only where a name would exceed its limit. */
export function childNames(templateName: string, userlandName: string): ChildNames {
  const base = fitName(`${templateName}-${userlandName}`, 59);
  return {
    deployment: base,
    service: `${base}-svc`,
    pvc: (volume) => fitName(`${base}-pvc-${volume}`, 253),
    userlandLabel: fitName(userlandName, 63),
  };
}
