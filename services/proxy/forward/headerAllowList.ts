/**
 * Which request headers reach an environment (issue 41 item 10): an allow-list of the standard
 * request headers, the browser's `Sec-*` and an application's own `X-*` headers unless their name
 * speaks of identity, compared folded (lowercased, "-", "_", "." and "~" dropped, as CGI/WSGI
 * servers and nginx read them); `Authorization` only with an application's token. headers.ts
 * applies it to every request.
 */

/**
 * Identity headers of common auth proxies and platforms (oauth2-proxy, Apache, Grafana/WebAuth,
 * Authelia, JupyterHub, Kubernetes impersonation, Kong, Cloudflare Access, Google IAP, ...), as
 * written; matched folded (`foldHeaderName`).
 */
export const IDENTITY_HEADERS: readonly string[] = [
  "x-user",
  "x-forwarded-user",
  "x-forwarded-email",
  "x-forwarded-preferred-username",
  "x-forwarded-groups",
  "x-forwarded-access-token",
  "x-auth-user",
  "x-auth-email",
  "x-email",
  "x-username",
  "x-proxy-user",
  "x-authenticated-user",
  "x-authenticated-userid",
  "x-authenticated-email",
  "x-original-user",
  "x-jupyterhub-user",
  "x-credential-identifier",
  "cf-access-jwt-assertion",
  "remote-user",
  "remote-email",
  "remote-groups",
  "remote-name",
];

/** Whole families of identity headers (oauth2-proxy, Apache, cloud load balancers, ours, ...), as written. */
export const IDENTITY_PREFIXES: readonly string[] = [
  "x-auth-request-",
  "x-remote-",
  "x-webauth-",
  "x-user-",
  "x-userland-",
  "x-ms-client-principal",
  "x-ms-token-",
  "x-goog-authenticated-user-",
  "x-goog-iap-",
  "cf-access-authenticated-user-",
  "x-amzn-oidc-",
  "x-pomerium-",
  "x-authentik-",
  "x-vouch-",
  "x-consumer-",
  "tailscale-user-",
  "impersonate-",
  "oidc-claim-",
];

/** A header name as the proxy compares it: lowercased, without "-", "_", "." and "~". */
export function foldHeaderName(name: string): string {
  return name.toLowerCase().replace(/[-_.~]/g, "");
}

const FOLDED_IDENTITY_HEADERS: ReadonlySet<string> = new Set(IDENTITY_HEADERS.map(foldHeaderName));
const FOLDED_IDENTITY_PREFIXES: readonly string[] = IDENTITY_PREFIXES.map(foldHeaderName);

/** Folded. */
const FORWARDING_HEADERS: ReadonlySet<string> = new Set([
  "forwarded",
  "xrealip",
  "xclientip",
  "trueclientip",
]);

export function isIdentityHeader(name: string): boolean {
  return isIdentityFolded(foldHeaderName(name));
}

export function isIdentityFolded(folded: string): boolean {
  return FOLDED_IDENTITY_HEADERS.has(folded) || FOLDED_IDENTITY_PREFIXES.some((p) => folded.startsWith(p));
}

/** Standard request headers (RFC 9110, Fetch, client hints), folded; families by prefix below. */
const STANDARD_REQUEST_HEADERS: ReadonlySet<string> = new Set(
  [
    "accept",
    "cache-control",
    "connection",
    "cookie",
    "date",
    "dnt",
    "device-memory",
    "downlink",
    "dpr",
    "early-data",
    "ect",
    "host",
    "last-event-id",
    "origin",
    "pragma",
    "priority",
    "purpose",
    "range",
    "referer",
    "rtt",
    "save-data",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "upgrade-insecure-requests",
    "user-agent",
    "viewport-width",
    "width",
  ].map(foldHeaderName),
);
const STANDARD_PREFIXES: readonly string[] = [
  "accept-",
  "access-control-request-",
  "content-",
  "if-",
  "sec-",
].map(foldHeaderName);
/** Words an application's own `X-*` header does not carry in its name unless it says who someone is. */
const IDENTITY_WORDS =
  /user|auth|email|mail|remote|ident|principal|cert|login|account|group|role|oidc|saml|jwt|claim|impersonat|visitor|consumer|subject|credential|person|owner|tenant/;
/** Authorization schemes that name a person to the server, not an application's token. */
const PERSON_SCHEMES = /^\s*(basic|digest|negotiate|ntlm)\b/i;

/**
 * Whether a request header the client sent reaches the environment as it is (the allow-list);
 * X-Forwarded-* and Forwarded are decided apart (from trusted proxies only).
 */
export function forwardsHeader(name: string, value?: string | string[]): boolean {
  return forwardsFolded(name, foldHeaderName(name), value);
}

/** forwardsHeader with the name folded once by the caller (every header of every request). */
export function forwardsFolded(name: string, folded: string, value: string | string[] | undefined): boolean {
  if (isIdentityFolded(folded)) return false;
  if (folded === "authorization")
    return !(Array.isArray(value) ? value : [value ?? ""]).some((v) => PERSON_SCHEMES.test(v));
  if (STANDARD_REQUEST_HEADERS.has(folded) || STANDARD_PREFIXES.some((p) => folded.startsWith(p)))
    return true;
  return /^x-/i.test(name) && !IDENTITY_WORDS.test(folded);
}

export function isForwardingHeader(folded: string): boolean {
  return folded.startsWith("xforwarded") || FORWARDING_HEADERS.has(folded);
}
