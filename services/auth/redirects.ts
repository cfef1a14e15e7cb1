/**
 * Where the browser may be sent after login or logout.
 *
 * Open redirects in oauth2-proxy and JupyterHub came from checking the raw string ("starts with /",
 * "ends with the domain") while browsers parse it differently (`/\t/evil`, `/\evil`, `//evil`). Here
 * the value is parsed with the WHATWG URL parser, the same one browsers use, its host is compared
 * exactly, and the re-serialized URL is what goes into `Location`, never the raw input.
 */
import { localPath } from "../../lib/localPath.ts";

export interface HostPattern {
  /** `*.example.org` matches exactly one more label: `a.example.org`, not `a.b.example.org`. */
  wildcard: boolean;
  /** Lower-case host name; for a wildcard, the part after `*.`. */
  hostname: string;
  /** Explicit port, or "" for the scheme's default port. */
  port: string;
}

export interface RedirectPolicy {
  /** The auth service's own public URL: its host is always allowed, relative paths resolve against it. */
  publicUrl: URL;
  hosts: readonly HostPattern[];
  /** Where to go when the requested target is missing or unsafe (already checked). */
  defaultRedirect: string;
}

const MAX_LENGTH = 4096;
const LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
const HOST_PATTERN = new RegExp(`^(\\*\\.)?(${LABEL}(?:\\.${LABEL})*)(?::([0-9]{1,5}))?$`);

/** Parses an allow-list entry such as `example.org`, `apps.example.org:8443` or `*.example.org`. */
export function parseHostPattern(entry: string): HostPattern {
  const m = HOST_PATTERN.exec(entry.trim().toLowerCase());
  if (!m)
    throw new Error(`"${entry}" is not a host name such as example.org, *.example.org or example.org:8443`);
  const [, star, hostname = "", port = ""] = m;
  if (port !== "" && (Number(port) < 1 || Number(port) > 65535))
    throw new Error(`"${entry}" has an invalid port`);
  // "*.org" would let every site under a public suffix in; demand at least a registrable-looking name.
  if (star && !hostname.includes("."))
    throw new Error(`"${entry}": a wildcard needs at least two labels after "*."`);
  return { wildcard: Boolean(star), hostname, port };
}

export function createRedirectPolicy(options: {
  publicUrl: URL;
  allowedHosts: readonly string[];
  defaultRedirect?: URL | undefined;
}): RedirectPolicy {
  const hosts = options.allowedHosts.map(parseHostPattern);
  const policy: RedirectPolicy = {
    publicUrl: options.publicUrl,
    hosts,
    defaultRedirect: options.publicUrl.href,
  };
  if (options.defaultRedirect) {
    const checked = checkRedirect(options.defaultRedirect.href, policy);
    if (!checked) throw new Error(`${options.defaultRedirect.href} is not on an allowed redirect host`);
    policy.defaultRedirect = checked.href;
  }
  return policy;
}

function matches(url: URL, pattern: HostPattern): boolean {
  if (pattern.port === "" ? url.port !== "" : effectivePort(url) !== pattern.port) return false;
  if (!pattern.wildcard) return url.hostname === pattern.hostname;
  const suffix = `.${pattern.hostname}`;
  if (!url.hostname.endsWith(suffix)) return false;
  const label = url.hostname.slice(0, -suffix.length);
  return label.length > 0 && !label.includes(".");
}

function effectivePort(url: URL): string {
  return url.port !== "" ? url.port : url.protocol === "https:" ? "443" : "80";
}

/**
 * The parsed target if it is safe to redirect to, else undefined. Accepts an absolute http(s) URL on
 * an allowed host, or a path starting with a single "/" (resolved against the public URL).
 */
export function checkRedirect(raw: unknown, policy: RedirectPolicy): URL | undefined {
  if (typeof raw !== "string" || raw.length === 0 || raw.length > MAX_LENGTH) return undefined;
  // Whitespace and control characters (once percent-decoded by the query parser) are what browsers
  // silently drop, turning "/\t/evil" into "//evil"; backslashes are read as "/" in http(s) URLs.
  // Neither belongs in a legitimate return URL, and non-ASCII hosts are look-alike material.
  if (/[^!-~]/.test(raw) || raw.includes("\\")) return undefined;
  if (raw.startsWith("/")) {
    // A path on the auth service's own site: the same check as every other local path.
    const path = localPath(raw);
    return path === undefined ? undefined : new URL(path, policy.publicUrl);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return undefined;
  if (url.username !== "" || url.password !== "") return undefined;
  if (url.host === policy.publicUrl.host) return url;
  return policy.hosts.some((pattern) => matches(url, pattern)) ? url : undefined;
}

/** The URL to send the browser to: the checked target, or the default landing page. */
export function safeRedirect(raw: unknown, policy: RedirectPolicy): string {
  return checkRedirect(raw, policy)?.href ?? policy.defaultRedirect;
}
