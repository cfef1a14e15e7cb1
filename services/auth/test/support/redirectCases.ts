/**
 * Return-URL cases shared by the unit test of redirects.ts and the end-to-end login test. Allowed
 * hosts are ALLOWED_HOSTS; `expect` is the redirect target (a "/path" is on the auth service's own
 * public URL) or null for "fall back to the default landing page".
 */
export const ALLOWED_HOSTS = "example.org,*.apps.example.org,localhost:8443";

export interface RedirectCase {
  rd: string;
  expect: string | null;
  why: string;
}

export const redirectCases: RedirectCase[] = [
  // Safe.
  { rd: "/", expect: "/", why: "own root" },
  { rd: "/lab/tree?x=1#cell", expect: "/lab/tree?x=1#cell", why: "own path with query and fragment" },
  { rd: "https://example.org/path?q=1", expect: "https://example.org/path?q=1", why: "allowed host" },
  { rd: "http://example.org/", expect: "http://example.org/", why: "allowed host over http" },
  {
    rd: "https://EXAMPLE.org/Case",
    expect: "https://example.org/Case",
    why: "host compared after normalization",
  },
  {
    rd: "https://code.apps.example.org/lab",
    expect: "https://code.apps.example.org/lab",
    why: "wildcard, one label",
  },
  { rd: "https://localhost:8443/x", expect: "https://localhost:8443/x", why: "allowed host with port" },
  { rd: "/%09/evil.com", expect: "/%09/evil.com", why: "encoded tab stays an on-site path" },
  { rd: "/%2F%2Fevil.com", expect: "/%2F%2Fevil.com", why: "encoded slashes stay an on-site path" },
  // Unsafe: scheme-relative and backslash tricks.
  { rd: "//evil.com", expect: null, why: "scheme-relative" },
  { rd: "///evil.com", expect: null, why: "triple slash" },
  { rd: "////evil.com/", expect: null, why: "quadruple slash" },
  { rd: "\\evil.com", expect: null, why: "backslash" },
  { rd: "\\\\evil.com", expect: null, why: "double backslash" },
  { rd: "/\\evil.com", expect: null, why: "slash backslash" },
  { rd: "\\/evil.com", expect: null, why: "backslash slash" },
  // Unsafe: whitespace and control characters browsers drop.
  { rd: "/\t/evil.com", expect: null, why: "tab between slashes" },
  { rd: "/\n/evil.com", expect: null, why: "newline between slashes" },
  { rd: "/\r/evil.com", expect: null, why: "carriage return between slashes" },
  { rd: "\t//evil.com", expect: null, why: "leading tab" },
  { rd: " //evil.com", expect: null, why: "leading space" },
  { rd: "/ /evil.com", expect: null, why: "space between slashes" },
  { rd: "/\u0000/evil.com", expect: null, why: "NUL" },
  { rd: "https://example.org\u0000.evil.com/", expect: null, why: "NUL in host" },
  // Unsafe: look-alike hosts and URL-syntax tricks.
  { rd: "https://example.org.evil.com/", expect: null, why: "allowed host as a prefix of another" },
  { rd: "https://evilexample.org/", expect: null, why: "allowed host as a suffix without a dot" },
  { rd: "https://evil.com#@example.org", expect: null, why: "fragment that looks like userinfo" },
  { rd: "https://evil.com?@example.org", expect: null, why: "query that looks like userinfo" },
  { rd: "https://example.org@evil.com/", expect: null, why: "allowed host as userinfo" },
  { rd: "https://example.org%2f@evil.com/", expect: null, why: "encoded slash in userinfo" },
  { rd: "https://user:pw@example.org/", expect: null, why: "userinfo on an allowed host" },
  { rd: "https://evil.com\\@example.org/", expect: null, why: "backslash before @" },
  { rd: "https:evil.com", expect: null, why: "scheme without slashes" },
  { rd: "https://example.org./", expect: null, why: "trailing dot" },
  { rd: "https://\u0435xample.org/", expect: null, why: "Cyrillic look-alike" },
  { rd: "https://apps.example.org/", expect: null, why: "wildcard does not cover its own suffix" },
  { rd: "https://a.b.apps.example.org/", expect: null, why: "wildcard covers one label only" },
  { rd: "https://example.org:8443/", expect: null, why: "allowed host on another port" },
  { rd: "https://localhost:8444/", expect: null, why: "allowed host:port on another port" },
  { rd: "https://evil.com/", expect: null, why: "other host" },
  { rd: "evil.com", expect: null, why: "relative without leading slash" },
  // Unsafe: other schemes.
  { rd: "javascript:alert(1)", expect: null, why: "javascript:" },
  { rd: "JaVaScRiPt:alert(1)", expect: null, why: "javascript: in mixed case" },
  { rd: "data:text/html,<script>alert(1)</script>", expect: null, why: "data:" },
  { rd: "ftp://example.org/", expect: null, why: "ftp:" },
  { rd: "", expect: null, why: "empty" },
];
