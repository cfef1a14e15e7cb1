/**
 * A minimal browser for tests: a cookie jar (one host, paths honoured), manual redirects, and a
 * hard refusal to contact anything but loopback, so a redirect to an off-site return URL is
 * observed, never followed.
 */
import assert from "node:assert/strict";

export interface StoredCookie {
  value: string;
  path: string;
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

export function isLoopback(url: string | URL): boolean {
  return LOOPBACK.has(new URL(url).hostname);
}

/** Parses one Set-Cookie header into name, value and lower-cased attributes. */
export function parseSetCookie(header: string): {
  name: string;
  value: string;
  attributes: Map<string, string>;
} {
  const [pair = "", ...attrs] = header.split(";");
  const eq = pair.indexOf("=");
  const attributes = new Map<string, string>();
  for (const attr of attrs) {
    const i = attr.indexOf("=");
    const key = (i >= 0 ? attr.slice(0, i) : attr).trim().toLowerCase();
    attributes.set(key, i >= 0 ? attr.slice(i + 1).trim() : "");
  }
  return { name: pair.slice(0, eq).trim(), value: decodeURIComponent(pair.slice(eq + 1).trim()), attributes };
}

export class Browser {
  readonly jar = new Map<string, StoredCookie>();

  cookie(name: string): string | undefined {
    return this.jar.get(name)?.value;
  }

  setCookie(name: string, value: string, path = "/"): void {
    this.jar.set(name, { value, path });
  }

  cookieNames(): string[] {
    return [...this.jar.keys()];
  }

  /** One request, no redirect following; stores cookies from the response. */
  async fetch(url: string | URL, init: RequestInit = {}): Promise<Response> {
    assert.ok(isLoopback(url), `test browser refuses to contact ${String(url)}`);
    const target = new URL(url);
    const cookies = [...this.jar.entries()]
      .filter(([, c]) => target.pathname.startsWith(c.path))
      .map(([name, c]) => `${name}=${encodeURIComponent(c.value)}`);
    const headers = new Headers(init.headers);
    if (cookies.length > 0) headers.set("cookie", cookies.join("; "));
    const response = await fetch(target, { ...init, headers, redirect: "manual" });
    for (const header of response.headers.getSetCookie()) {
      const { name, value, attributes } = parseSetCookie(header);
      const expires = attributes.get("expires");
      const expired =
        attributes.get("max-age") === "0" || (expires !== undefined && Date.parse(expires) <= Date.now());
      if (expired) this.jar.delete(name);
      else this.jar.set(name, { value, path: attributes.get("path") ?? "/" });
    }
    return response;
  }

  /**
   * Follows redirects on loopback. Stops at the first non-redirect response (`url` is where it
   * came from), at a redirect that leaves loopback (returned as `offsite`, never fetched), or
   * before fetching a URL for which `stopAt` is true (`url` is that URL, not yet fetched).
   */
  async navigate(
    url: string | URL,
    options: { stopAt?: (url: URL) => boolean; max?: number } = {},
  ): Promise<{ response: Response; url: URL; chain: string[]; offsite?: URL }> {
    let current = new URL(url);
    const chain = [current.href];
    for (let i = 0; i < (options.max ?? 20); i++) {
      const response = await this.fetch(current);
      const location = response.headers.get("location");
      if (response.status < 300 || response.status >= 400 || !location)
        return { response, url: current, chain };
      await response.body?.cancel();
      const next = new URL(location, current);
      chain.push(next.href);
      if (!isLoopback(next)) return { response, url: current, chain, offsite: next };
      if (options.stopAt?.(next)) return { response, url: next, chain };
      current = next;
    }
    throw new Error(`too many redirects: ${chain.join(" -> ")}`);
  }
}
