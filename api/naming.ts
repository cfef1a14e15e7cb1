/**
 * Names and labels of everything the platform creates. User identities are arbitrary strings and
 * Kubernetes names are DNS labels, so a readable slug alone would let "Koba1t" and "koba1t" (or
 * "a.b" and "a-b") share an environment. Every generated name therefore ends in a hash of the exact
 * identity (and, since one student may hold one environment per Template, of the exact Template),
 * and nothing ever derives a name to find a Userland: the proxy, the user-manager and the roster
 * import look Userlands up by spec.user and spec.templateName, so Userlands named by an older rule
 * (or by hand) keep working.
 */
import { createHash } from "node:crypto";

export const LABELS = {
  managedBy: "app.kubernetes.io/managed-by",
  /**
   * On a Userland: the class (section) it belongs to. An Assignment's spec.class selects by it; the
   * console groups by it (the user-manager's USER_MANAGER_CLASS_LABEL, this by default).
   */
  class: "userland.dev/class",
  /** The Userland that owns a child (its name, shortened with a hash if longer than a label value). */
  userland: "userland.dev/userland",
  template: "userland.dev/template",
  /** Selects a Userland's pods; unique per Userland and Template. */
  instance: "userland.dev/instance",
  volume: "userland.dev/volume",
  /** A hash of spec.user on each PVC: a claim is never mounted for a different identity. */
  userHash: "userland.dev/user-hash",
  /**
   * On a course folder's claim: the folder's name. Its Template is named by the courseTemplate
   * annotation, not the `template` label, which selects students' claims.
   */
  courseFolder: "userland.dev/course-folder",
  /**
   * On the operator's copy pods (operator/coursework/copyPods.ts): their job (publish, distribute,
   * handin, feedback). They carry no managed-by label, so no policy meant for environments selects
   * them; the deny-all NetworkPolicy for copy pods selects this label.
   */
  copy: "userland.dev/copy",
} as const;

/** Annotations on the children the operator creates. */
export const ANNOTATIONS = {
  /** The exact Userland name on every child (label values are limited to 63 characters). */
  userlandName: "userland.dev/userland-name",
  /** A hash of what the operator last wrote; a child whose hash differs is rewritten. */
  desiredHash: "userland.dev/desired-hash",
  /**
   * On a course folder's claim: the Template it serves. Kept with the data when a Retain folder's
   * Template is deleted, so a Template made again with that name takes its materials back.
   */
  courseTemplate: "userland.dev/course-template",
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

/** The readable start of a name: `slug(s, max)`, made to start with a letter ("u-" before a digit or nothing). */
function readablePart(s: string, max: number): string {
  const readable = slug(s, max);
  return /^[a-z]/.test(readable) ? readable : `u-${readable}`.slice(0, max).replace(/-+$/g, "");
}

/** Readable characters before the hash: with "-" and a 10-character hash, names stay ≤ 31. */
const READABLE_MAX = 20;
/** How much of the Template's name a Userland name shows (the rest of READABLE_MAX is the user's). */
const TEMPLATE_PART_MAX = 8;

/**
 * The name the user-manager gives a new Userland: one per (user, Template) pair. A readable part,
 * the user's slug and the Template's first characters, then a hash of the exact pair, e.g.
 * ("Koba1t", "code-server") → "koba1t-code-ser-<hash>", ("Koba1t", "phpmyadmin") →
 * "koba1t-phpmyadm-<hash>", ("koba1t", "code-server") → "koba1t-code-ser-<another hash>".
 *
 * - The hash covers the identity byte for byte and the Template name (joined by a NUL, which
 *   neither may contain), so two students never share a name, nor do one student's Templates; the
 *   readable part is for people only and may repeat.
 * - Always a DNS-1035 label of at most 31 characters (≤ 20 readable, "-", 10 hash characters), so
 *   child names (`<template>-<userland>-svc`, …) stay within Kubernetes' 63-character limit.
 * - Before one student could hold several Templates' environments, Userlands were named
 *   `legacyUserlandNameFor(user)`. Those keep their names and keep working: every lookup goes by
 *   spec.user and spec.templateName, never by a derived name, and a pair that already has a
 *   Userland under any name gets no second one.
 */
export function userlandNameFor(user: string, templateName: string): string {
  const template = slug(templateName, TEMPLATE_PART_MAX);
  const person = readablePart(user, READABLE_MAX - template.length - 1);
  return `${person}-${template}-${shortHash(`${user}\u0000${templateName}`)}`;
}

/**
 * The name the user-manager gave Userlands when a student could hold only one: a readable slug plus
 * a hash of the exact identity, e.g. "Koba1t" → "koba1t-diqpq3fpyd". Such Userlands keep their
 * names (renaming would replace the environment); this is kept for tests and for finding a kept
 * volume's old name (`<template>-<legacy name>-pvc-<volume>`) when one is re-created by hand.
 */
export function legacyUserlandNameFor(user: string): string {
  return `${readablePart(user, READABLE_MAX)}-${shortHash(user)}`;
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

const SERVICE_SUFFIX = "-svc";

/** The ESC naming scheme, shortened with a hash only where a name would exceed its limit. */
export function childNames(templateName: string, userlandName: string): ChildNames {
  const base = fitName(`${templateName}-${userlandName}`, 59);
  return {
    deployment: base,
    service: `${base}${SERVICE_SUFFIX}`,
    pvc: (volume) => fitName(`${base}-pvc-${volume}`, 253),
    userlandLabel: fitName(userlandName, 63),
  };
}

/** The Deployment named with a `childNames` Service (its name without "-svc"); undefined for any other name. */
export function deploymentOfService(serviceName: string): string | undefined {
  return serviceName.endsWith(SERVICE_SUFFIX) ? serviceName.slice(0, -SERVICE_SUFFIX.length) : undefined;
}

/**
 * A Template's course folder (docs/decisions/0011-coursework.md): one claim per Template and
 * folder, `<template>-course-<folder>` (at most 24 + 8 + 40 characters), and the pod volume that
 * mounts it, `course-<folder>`. Folder names never contain `pvc-` (the CRD refuses it), so a claim
 * name never equals a student's `<template>-<userland>-pvc-<volume>`.
 */
export const courseFolderNames = (templateName: string, folder: string) => ({
  claim: `${templateName}-course-${folder}`,
  podVolume: `course-${folder}`,
});

/**
 * A Template's collection (docs/decisions/0011-coursework.md): the one claim keeping its
 * assignments' published snapshots, hand-ins and feedback, and its layout. No student's environment
 * mounts it; teachers' environments see `handins/` and `grades/` read-only and `feedback/` read-write.
 */
export const collectionNames = (templateName: string) => ({
  claim: `${templateName}-collection`,
  podVolume: "collection",
});

/**
 * A student's folder name inside the collection: `legacyUserlandNameFor(user)`, a slug plus a hash
 * of the exact identity (identities may hold any printable character, `/` and `..` included, so
 * the raw one is never a path). One per person for every Template.
 */
export const collectionUserFolder = (user: string) => legacyUserlandNameFor(user);

/** Paths inside a Template's collection claim, relative to its root. */
export const collectionPaths = {
  /** The snapshot of an assignment's source taken for one release (read-only once written). */
  published: (assignment: string, release: number) => `published/${assignment}/${release}`,
  /** One version of one student's hand-in of one assignment (read-only once written). */
  handIn: (assignment: string, user: string, version: number) =>
    `handins/${assignment}/${collectionUserFolder(user)}/${version}`,
  /** What teachers hand back to one student; copied to `<home>/assignments/<name>/feedback/`. */
  feedback: (assignment: string, user: string) => `feedback/${assignment}/${collectionUserFolder(user)}`,
  /** The snapshot of an assignment's autograder taken for one autograder release (never mounted by students). */
  autograder: (assignment: string, release: number) => `autograders/${assignment}/${release}`,
  /** The reference solution's snapshot for one autograder release. */
  autograderSolution: (assignment: string, release: number) =>
    `autograders/${assignment}/${release}-solution`,
  /** A check run's results (the reference solution's, the starter files'): no student's folder starts with a dot. */
  autograderCheck: (assignment: string, which: "solution" | "starter", key: string) =>
    `grades/${assignment}/.check/${which}/${key}`,
  /** One grading run's results.json and output, by the run's key (its inputs' hash). */
  grade: (assignment: string, user: string, key: string) =>
    `grades/${assignment}/${collectionUserFolder(user)}/${key}`,
} as const;

/**
 * One student's Submission of one Assignment: `<assignment>-<user's slug>-<hash of both>`, within
 * Kubernetes' 253 characters and unique per pair (lookups go by spec.assignment and spec.user).
 */
export function submissionNameFor(assignment: string, user: string): string {
  return fitName(
    `${assignment}-${readablePart(user, READABLE_MAX)}-${shortHash(`${assignment}\u0000${user}`)}`,
    253,
  );
}
