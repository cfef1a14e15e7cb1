/**
 * Host names as the proxy compares them: settings (PROXY_HOST_TEMPLATES, PROXY_BASE_DOMAIN) and
 * request Host headers are normalised the same way, or a mapped host would never match.
 */

/** A host name, optionally with a port: what PROXY_HOST_TEMPLATES and PROXY_BASE_DOMAIN accept. */
export const HOST_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(:\d{1,5})?$/;

/** Case and a trailing dot do not change which host is meant. */
export function normaliseHost(raw: string): string {
  return raw.trim().toLowerCase().replace(/\.$/, "");
}

/** The host without its port; an IPv6 literal keeps its brackets. */
export function stripPort(host: string): string {
  if (host.startsWith("[")) return host.slice(0, host.indexOf("]") + 1);
  const colon = host.lastIndexOf(":");
  return colon >= 0 ? host.slice(0, colon) : host;
}
