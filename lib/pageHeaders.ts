/**
 * The security headers of the platform's own HTML pages (the proxy's pages, its signed-out page,
 * the console, the auth service's sign-in pages): one Content-Security-Policy builder, so a page
 * cannot drift from the others. No page loads anything from elsewhere; scripts run only when a
 * page names its one inline script by hash; nothing may frame a page (clickjacking a sign-out or a
 * console button).
 */

export interface PageSecurity {
  /** `sha256-…` of the page's one inline script; without it no script runs. */
  scriptHash?: string | undefined;
  /**
   * Where forms may submit (and, in Chromium, where their redirects may go): "self" plus these
   * origins, or "unrestricted" for a page whose form continues at an address known only at run
   * time (the auth service's sign-out ends at the identity provider).
   */
  formTargets?: readonly string[] | "unrestricted";
  /** The page's script talks to its own origin (the proxy's starting page polls its progress). */
  connectSelf?: boolean;
  /** no-referrer where even the own origin must not learn where the browser came from. */
  referrer?: "same-origin" | "no-referrer";
}

export function contentSecurityPolicy(page: PageSecurity = {}): string {
  const directives = ["default-src 'none'", "style-src 'unsafe-inline'"];
  if (page.connectSelf) directives.push("connect-src 'self'");
  if (page.formTargets !== "unrestricted") {
    directives.push(`form-action ${["'self'", ...(page.formTargets ?? [])].join(" ")}`);
  }
  directives.push("base-uri 'none'", "frame-ancestors 'none'");
  if (page.scriptHash) directives.push(`script-src '${page.scriptHash}'`);
  return directives.join("; ");
}

/**
 * The headers every HTML page of the platform sends: not sniffed, not framed, its CSP. Caching is
 * the caller's (the auth service sets these on every response, some of which may be cached).
 */
export function pageSecurityHeaders(page: PageSecurity = {}): Record<string, string> {
  return {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": page.referrer ?? "same-origin",
    "content-security-policy": contentSecurityPolicy(page),
  };
}
