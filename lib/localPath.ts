/**
 * The one check for a path on this site that a page links to or a response redirects to (the
 * proxy's "Try again" link and Start form, the auth service's relative return addresses).
 *
 * Browsers read "//evil.example/x" and "/\evil.example/x" as another site, drop tabs and line
 * breaks ("/\t/evil.example"), and a header cannot carry characters outside Latin-1 (Node throws,
 * which was a 500). So only printable ASCII without backslashes passes; the value is parsed with
 * the WHATWG URL parser, like a browser would, and its re-serialization is what is returned, never
 * the raw input.
 */

const MAX_LENGTH = 4096;
/** Never dialled or shown: only the parser needs an origin to resolve against. */
const BASE = "http://local.invalid";

/** The path (with query and fragment) if `raw` names a place on this site, else undefined. */
export function localPath(raw: unknown): string | undefined {
  if (typeof raw !== "string" || raw.length === 0 || raw.length > MAX_LENGTH) return undefined;
  if (!raw.startsWith("/") || raw.startsWith("//") || /[^!-~]/.test(raw) || raw.includes("\\"))
    return undefined;
  let url: URL;
  try {
    url = new URL(raw, BASE);
  } catch {
    return undefined;
  }
  if (url.origin !== BASE) return undefined;
  return `${url.pathname}${url.search}${url.hash}`;
}
