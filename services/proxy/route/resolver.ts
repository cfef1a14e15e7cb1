/**
 * THE seam between "which environment" and "which address is dialled". Everything the proxy
 * forwards goes to the URL a resolver returns; no other code builds upstream addresses.
 *
 * - Production: `clusterDnsResolver` → http://<service>.<namespace>.svc.<cluster domain>:<port>,
 *   so kube-proxy / the Service picks the pod and the proxy never learns a pod or cluster IP.
 * - Tests and the local platform: `overrideResolver` maps "<namespace>/<service>" to a loopback
 *   URL (PROXY_UPSTREAM_OVERRIDES, or PROXY_UPSTREAM_OVERRIDES_FILE re-read when it changes).
 *   With overrides, a Service that is not listed resolves to nothing (the student sees a 502
 *   page) rather than falling back to cluster DNS: a test or laptop must never dial out by
 *   accident. Override targets must be loopback, for the same reason.
 */
import { readFileSync, unwatchFile, watchFile } from "node:fs";
import { LRUCache } from "lru-cache";
import type { Logger } from "../../../lib/logger.ts";

export interface UpstreamResolver {
  readonly kind: "cluster-dns" | "overrides";
  /** The base URL for a Userland's Service, or undefined when it has no reachable address. */
  resolve(namespace: string, service: string, port: number): URL | undefined;
  close(): void;
}

export type UpstreamOverrides = Map<string, URL>;

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);
const KEY_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function clusterDnsResolver(clusterDomain = "cluster.local"): UpstreamResolver {
  // Bounded: a long-running replica sees every environment ever started.
  const cache = new LRUCache<string, URL>({ max: 10_000 });
  return {
    kind: "cluster-dns",
    resolve(namespace, service, port) {
      const key = `${namespace}/${service}:${port}`;
      let url = cache.get(key);
      if (!url) {
        url = new URL(`http://${service}.${namespace}.svc.${clusterDomain}:${port}`);
        cache.set(key, url);
      }
      return url;
    },
    close() {},
  };
}

/** Checks one override target: an http URL on loopback with a port and nothing else. */
export function overrideTarget(raw: string, key: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`${key}: "${raw}" is not a URL such as http://127.0.0.1:8081`);
  }
  if (url.protocol !== "http:" || !LOOPBACK_HOSTS.has(url.hostname) || url.port === "") {
    throw new Error(`${key}: "${raw}" must be http://127.0.0.1:<port> (overrides only reach loopback)`);
  }
  if (url.pathname !== "/" || url.search || url.hash || url.username)
    throw new Error(`${key}: "${raw}" must not have a path, query or user`);
  return url;
}

function checkKey(key: string): string {
  if (!KEY_PATTERN.test(key)) throw new Error(`"${key}" is not <namespace>/<service>`);
  return key;
}

/** `ns/svc=http://127.0.0.1:8081,ns/other=http://127.0.0.1:8082`. */
export function parseOverrides(raw: string): UpstreamOverrides {
  const map: UpstreamOverrides = new Map();
  for (const entry of raw
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = entry.indexOf("=");
    if (eq <= 0) throw new Error(`"${entry}" is not <namespace>/<service>=http://127.0.0.1:<port>`);
    const key = checkKey(entry.slice(0, eq).trim());
    map.set(key, overrideTarget(entry.slice(eq + 1).trim(), key));
  }
  return map;
}

/** The JSON object form used by PROXY_UPSTREAM_OVERRIDES_FILE. */
export function parseOverridesJson(text: string, source: string): UpstreamOverrides {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`${source}: not valid JSON (${(error as Error).message})`, { cause: error });
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new Error(`${source}: expected an object {"<namespace>/<service>": "http://127.0.0.1:<port>"}`);
  }
  const map: UpstreamOverrides = new Map();
  for (const [key, value] of Object.entries(json)) {
    if (typeof value !== "string") throw new Error(`${source}: ${key}: expected a URL string`);
    map.set(checkKey(key), overrideTarget(value, `${source}: ${key}`));
  }
  return map;
}

export interface OverrideResolver extends UpstreamResolver {
  set(namespace: string, service: string, url: string): void;
  delete(namespace: string, service: string): void;
}

/** Overrides held in memory (tests may add and remove entries while the proxy runs). */
export function overrideResolver(initial: UpstreamOverrides = new Map()): OverrideResolver {
  const map = new Map(initial);
  return {
    kind: "overrides",
    resolve: (namespace, service) => map.get(`${namespace}/${service}`),
    set(namespace, service, url) {
      const key = checkKey(`${namespace}/${service}`);
      map.set(key, overrideTarget(url, key));
    },
    delete: (namespace, service) => void map.delete(`${namespace}/${service}`),
    close() {},
  };
}

/**
 * Overrides from a JSON file, re-read when it changes (polled once a second, so editors that
 * replace the file work too). A broken edit keeps the previous map and is logged.
 */
export function fileOverrideResolver(path: string, log: Logger, pollMs = 1000): UpstreamResolver {
  let map = parseOverridesJson(readFileSync(path, "utf8"), path);
  const listener = () => {
    try {
      map = parseOverridesJson(readFileSync(path, "utf8"), path);
      log.info({ path, entries: map.size }, "upstream overrides reloaded");
    } catch (error) {
      log.warn(
        { path, err: (error as Error).message },
        "upstream overrides not reloaded; keeping the previous ones",
      );
    }
  };
  watchFile(path, { interval: pollMs, persistent: false }, listener);
  return {
    kind: "overrides",
    resolve: (namespace, service) => map.get(`${namespace}/${service}`),
    close: () => unwatchFile(path, listener),
  };
}
