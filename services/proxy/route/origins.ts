/**
 * Which origin an environment is served from, and what that means for the browser features that
 * are scoped to an origin (service workers, storage, cookies):
 *
 * - `shared` (the default): every student's environment of a Template at `<template>.<domain>`. An
 *   environment is code its student controls, so on a shared browser (a lab PC) one student's
 *   environment could leave behind something that acts on the next student's traffic. The proxy
 *   therefore refuses service-worker scripts (unless the Template opts in) and drops
 *   `Service-Worker-Allowed` from environments' answers; sign-out and sign-in clear the origin
 *   (`/_userland/signed-out`, endpoints/studentEndpoints.ts).
 * - `perUser`: each environment at its own host, `<userland>--<template>.<domain>`: one label under
 *   the base domain, so one wildcard certificate `*.<domain>` and one wildcard DNS record cover every
 *   environment (a `<userland>.<template>.<domain>` name would need a certificate per Template).
 *   `<template>.<domain>` stays the address students are given: it only ever sends them on to their
 *   own environment's host and serves no environment content itself.
 *
 * A per-user host is served in the shared mode too (unless a Template has its name), so that
 * replicas of both modes answer it while an admin switches from one to the other.
 */
import type { IncomingMessage } from "node:http";
import { SERVICE_WORKERS_ANNOTATION, type Template, type Userland } from "../../../api/v1alpha1/index.ts";

export const ORIGIN_MODES = ["shared", "perUser"] as const;
export type OriginMode = (typeof ORIGIN_MODES)[number];

/** Separates the Userland from the Template in a per-user host label. */
const SEPARATOR = "--";
/** DNS: a label has at most 63 characters. */
const MAX_LABEL = 63;

/** The per-user host label of a Userland, or undefined when it would not be a valid DNS label. */
export function userlandLabel(userland: Pick<Userland, "metadata" | "spec">): string | undefined {
  const label = `${userland.metadata.name ?? ""}${SEPARATOR}${userland.spec.templateName}`;
  return label.length <= MAX_LABEL ? label : undefined;
}

/** Every way to read `label` as `<userland>--<template>` (either part may itself contain "--"). */
export function splitUserlandLabel(label: string): { userland: string; template: string }[] {
  const splits: { userland: string; template: string }[] = [];
  for (let i = label.indexOf(SEPARATOR); i > 0; i = label.indexOf(SEPARATOR, i + 1)) {
    const template = label.slice(i + SEPARATOR.length);
    if (template !== "") splits.push({ userland: label.slice(0, i), template });
  }
  return splits;
}

/** The Userland a per-user host label names: one whose name and Template both match the label. */
export function userlandForLabel(
  label: string,
  getUserland: (name: string) => Userland | undefined,
): Userland | undefined {
  for (const { userland, template } of splitUserlandLabel(label)) {
    const found = getUserland(userland);
    if (found && found.spec.templateName === template) return found;
  }
  return undefined;
}

/** A browser fetching a service worker's script says so (Fetch standard: `Service-Worker: script`). */
export function isServiceWorkerScript(req: IncomingMessage): boolean {
  const value = req.headers["service-worker"];
  return typeof value === "string" && value.trim().toLowerCase() === "script";
}

/** Service workers are the student's own business on their own origin; on a shared one only by opt-in. */
export function serviceWorkersAllowed(mode: OriginMode, template: Template | undefined): boolean {
  if (mode === "perUser") return true;
  return template?.metadata.annotations?.[SERVICE_WORKERS_ANNOTATION]?.trim().toLowerCase() === "allowed";
}
