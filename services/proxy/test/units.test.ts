/** The proxy's pure parts: host routing, the Userland index, header rules, the resolver seam, settings. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import { join } from "node:path";
import { test } from "node:test";
import type { Userland } from "../../../api/v1alpha1/index.ts";
import { ConfigError } from "../../../lib/config.ts";
import { startingPage, stoppedPage } from "../pages/environmentPages.ts";
import { pageHeaders } from "../pages/pageShell.ts";
import { pino } from "pino";
import { justReady, mayRetry } from "../forward/readyRetry.ts";
import { isStalled, progressText, startDuration, startWords } from "../../../lib/startProgress.ts";
import { eventually } from "../../../test/support/cluster.ts";
import { loadProxyConfig } from "../config.ts";
import { cookieValues } from "../../../lib/requestSessions.ts";
import { prepareUpstreamHeaders, trustedProxies, withoutSessionCookie } from "../forward/headers.ts";
import { forwardsHeader, isIdentityHeader } from "../forward/headerAllowList.ts";
import {
  clusterDnsResolver,
  fileOverrideResolver,
  overrideResolver,
  parseOverrides,
} from "../route/resolver.ts";
import { hostForTemplate, templateForHost } from "../route/templateHosts.ts";
import { UserlandIndex, type ClusterView } from "../route/userlandIndex.ts";
import { templateHosts } from "../endpoints/signedOut.ts";
import { environmentState } from "../route/environmentState.ts";
import { originAllowed } from "../forward/headers.ts";
import { classifyUpstreamError } from "../forward/forwarder.ts";
import { clientResponseHeaders } from "../forward/responseHeaders.ts";
import { SPOOFED_IDENTITY_HEADERS, testKeys } from "./support.ts";
import { sessionCacheTag, sessionRequestValidators } from "../forward/sharedCache.ts";

const routes = {
  hostTemplates: new Map([
    ["code.example.org", "code"],
    ["ide.example.org:8443", "cloud9"],
  ]),
  baseDomain: "apps.example.org",
  defaultTemplate: undefined,
};

test("the Host picks the Template: map, then <template>.<base domain>, then the default", () => {
  assert.equal(templateForHost("code.example.org", routes), "code");
  assert.equal(
    templateForHost("CODE.Example.ORG.:443", routes),
    "code",
    "case, trailing dot and port do not matter",
  );
  assert.equal(templateForHost("ide.example.org:8443", routes), "cloud9", "a mapped port is matched exactly");
  assert.equal(templateForHost("ide.example.org", routes), undefined);
  assert.equal(templateForHost("jupyter.apps.example.org", routes), "jupyter");
  assert.equal(templateForHost("a.b.apps.example.org", routes), undefined, "one label only");
  assert.equal(templateForHost("Bad_Name.apps.example.org", routes), undefined);
  assert.equal(templateForHost("apps.example.org", routes), undefined);
  assert.equal(templateForHost("evil.org", { ...routes, defaultTemplate: "code" }), "code");
  assert.equal(templateForHost(undefined, routes), undefined);
});

test("a base domain that is an IP address has no Template subdomains: the clearing chain and Open links keep to real hosts", () => {
  const local = {
    hostTemplates: new Map([["127.0.0.1:4184", "jupyter"]]),
    baseDomain: "127.0.0.1",
    defaultTemplate: "code",
    loginUrl: new URL("http://127.0.0.1:4181/login"),
  };
  const cluster = { templateNames: () => ["code", "jupyter", "phpmyadmin"] };
  assert.deepEqual(templateHosts(local, cluster as unknown as ClusterView, ":4180"), ["127.0.0.1:4184"]);
  assert.equal(hostForTemplate("jupyter", local, "127.0.0.1:4180", ":4180"), "127.0.0.1:4184");
  assert.equal(hostForTemplate("phpmyadmin", local, "127.0.0.1:4180", ":4180"), undefined);
  assert.equal(hostForTemplate("code", local, "127.0.0.1:4180", ":4180"), "127.0.0.1:4180");
  assert.deepEqual(
    templateHosts({ ...local, baseDomain: "apps.example.org" }, cluster as unknown as ClusterView, ""),
    ["127.0.0.1:4184", "code.apps.example.org", "jupyter.apps.example.org", "phpmyadmin.apps.example.org"],
  );
});

function userland(name: string, user: string, templateName: string, created: string): Userland {
  return {
    apiVersion: "userland.dev/v1alpha1",
    kind: "Userland",
    metadata: { name, namespace: "ns", creationTimestamp: created as unknown as Date },
    spec: { user, templateName },
  };
}

test("the index finds Userlands by exact identity and Template; duplicates resolve to the oldest", () => {
  const index = new UserlandIndex();
  index.upsert(userland("b", "Koba1t", "code", "2026-01-02T00:00:00Z"));
  index.upsert(userland("a", "koba1t", "code", "2026-01-01T00:00:00Z"));
  assert.equal(index.find("Koba1t", "code")?.metadata.name, "b");
  assert.equal(index.find("koba1t", "code")?.metadata.name, "a");
  assert.equal(index.find("KOBA1T", "code"), undefined);
  index.upsert(userland("c", "Koba1t", "code", "2026-01-01T00:00:00Z"));
  assert.equal(index.find("Koba1t", "code")?.metadata.name, "c", "the oldest of two");
  index.upsert(userland("c", "Koba1t", "jupyter", "2026-01-01T00:00:00Z"));
  assert.equal(index.find("Koba1t", "code")?.metadata.name, "b", "a templateName change moves the Userland");
  assert.equal(index.find("Koba1t", "jupyter")?.metadata.name, "c");
  index.remove(userland("b", "Koba1t", "code", ""));
  assert.equal(index.find("Koba1t", "code"), undefined);
  assert.equal(index.size, 2);
});

test("environment states follow phase, enabled and observedGeneration", () => {
  const u = (status: Userland["status"], enabled?: boolean, generation = 1): Userland => ({
    ...userland("a", "a", "code", ""),
    spec: { user: "a", templateName: "code", ...(enabled === undefined ? {} : { enabled }) },
    metadata: { name: "a", generation },
    status,
  });
  const service = { name: "s", port: 80 };
  assert.equal(environmentState(undefined), "missing");
  assert.equal(environmentState(u({ phase: "Ready", service, observedGeneration: 1 })), "ready");
  assert.equal(environmentState(u({ phase: "Ready", service, observedGeneration: 1 }, false)), "stopped");
  assert.equal(
    environmentState(u({ phase: "Ready", service, observedGeneration: 1 }, true, 2)),
    "starting",
    "status of an older spec",
  );
  assert.equal(environmentState(u({ phase: "Failed", observedGeneration: 1 })), "failed");
  assert.equal(environmentState(u({ phase: "Starting", observedGeneration: 1 })), "starting");
  assert.equal(environmentState(u(undefined)), "starting");
});

test("identity headers are recognised in every spelling", () => {
  for (const name of SPOOFED_IDENTITY_HEADERS) {
    assert.ok(!forwardsHeader(name, "victim"), name);
  }
  for (const name of [
    "Authorization",
    "X-Requested-With",
    "User-Agent",
    "X-Xsrftoken",
    "Cookie",
    "X-Api-Key",
  ])
    assert.ok(!isIdentityHeader(name), name);
});

test("only an allow-list of request headers reaches an environment (issue 41 item 10)", () => {
  for (const name of [
    "Accept",
    "Accept-Language",
    "Cache-Control",
    "Content-Type",
    "If-None-Match",
    "Origin",
    "Range",
    "Referer",
    "Sec-Fetch-Site",
    "Sec-WebSocket-Key",
    "User-Agent",
    "X-Requested-With",
    "X-XSRFToken",
    "X-Api-Key",
    "X-Vscode-Version",
  ])
    assert.ok(forwardsHeader(name, "1"), `${name} reaches the environment`);
  // Besides SPOOFED_IDENTITY_HEADERS (above): names no environment needs.
  for (const name of ["X_Requested_With", "Proxy-Authorization", "Some-Made-Up-Header"])
    assert.ok(!forwardsHeader(name, "1"), `${name} is dropped`);
  assert.ok(forwardsHeader("Authorization", "Bearer abc"), "an application's bearer token");
  assert.ok(forwardsHeader("Authorization", "token abc"), "Jupyter's API token");
  for (const value of ["Basic dmljdGltOng=", "basic x", "Digest username=victim", "Negotiate x", "NTLM x"])
    assert.ok(!forwardsHeader("Authorization", value), value);
});

test("upstream headers: identity and forwarding headers replaced, session cookie removed", () => {
  const headers: Record<string, string | string[] | undefined> = {
    "x-user": "mallory, admin",
    x_user: "mallory",
    "x-forwarded-for": "10.0.0.1",
    x_forwarded_for: "10.0.0.2",
    "x-forwarded-host": "evil.example",
    forwarded: "for=1.2.3.4",
    expect: "100-continue",
    cookie: "a=1; userland_session=tok; __Host-userland_session=x; b=2",
  };
  prepareUpstreamHeaders(
    headers,
    "alice",
    { trusted: false, peer: "192.0.2.7", proto: "http", host: "code.example.org" },
    "userland_session",
  );
  assert.deepEqual(headers, {
    "x-user": "alice",
    "x-forwarded-for": "192.0.2.7",
    "x-forwarded-proto": "http",
    "x-forwarded-host": "code.example.org",
    cookie: "a=1; b=2",
  });
  const trusted: Record<string, string | string[] | undefined> = {
    "x-forwarded-for": "198.51.100.1",
    x_forwarded_for: "1.1.1.1",
    "x-forwarded-proto": "https",
  };
  prepareUpstreamHeaders(
    trusted,
    "alice",
    { trusted: true, peer: "10.1.2.3", proto: "https", host: "code.example.org" },
    "userland_session",
  );
  assert.equal(trusted["x-forwarded-for"], "198.51.100.1, 10.1.2.3", "a trusted proxy's chain is extended");
  assert.equal(
    trusted.x_forwarded_for,
    undefined,
    "only canonical spellings pass, even from a trusted proxy",
  );
  assert.equal(withoutSessionCookie("userland_session=x", "userland_session"), undefined);
  assert.deepEqual(cookieValues('a=1; userland_session="q"; userland_session=r', "userland_session"), [
    "q",
    "r",
  ]);
});

test("response headers: hop-by-hop and Connection-listed names dropped, the session cookie never set, service workers by rule", () => {
  const upstream = () => ({
    "content-type": "text/plain",
    connection: "keep-alive, X-Internal",
    "keep-alive": "timeout=5",
    "transfer-encoding": "chunked",
    "proxy-connection": "keep-alive",
    "x-internal": "secret",
    "set-cookie": "userland_session=evil; Path=/",
    "service-worker-allowed": "/",
    "x-app": "1",
  });
  assert.deepEqual(clientResponseHeaders(upstream(), false), {
    "content-type": "text/plain",
    "set-cookie": [],
    "x-app": "1",
  });
  assert.equal(clientResponseHeaders(upstream(), true)["service-worker-allowed"], "/");
  assert.deepEqual(
    clientResponseHeaders({ "set-cookie": ["app=1", "USERLAND_SESSION=x", " userland_session=y"] }, true),
    { "set-cookie": ["app=1"] },
  );
});

test("response headers: no Set-Cookie for any platform cookie name reaches the browser (issue 29 item 2)", () => {
  const planted = [
    "userland_login_AAAAAAAAAAAAAAAA=tx; Domain=example.org; Path=/callback/",
    "__Host-userland_login_AAAAAAAAAAAAAAAA=tx; Secure; Path=/",
    "userland_signed_out=; Max-Age=0; Domain=example.org",
    "__Secure-userland_session=x; Secure",
    "__HOST-Userland_Session=x; Secure; Path=/",
    "=userland_session=x; Domain=example.org",
    " userland_visit=ns/other",
  ];
  assert.deepEqual(clientResponseHeaders({ "set-cookie": [...planted, "app=1", "userlandish=2"] }, true), {
    "set-cookie": ["app=1", "userlandish=2"],
  });
});

test("shared origin: an answer is never reused by another session (issue 29 item 1)", () => {
  const alice = sessionCacheTag({ sid: "sid-alice" });
  const bob = sessionCacheTag({ sid: "sid-bob" });
  assert.notEqual(alice, bob);
  assert.equal(sessionCacheTag({ sid: "sid-alice" }), alice, "the same sid, the same tag");
  assert.ok(!alice.includes("sid"), "the tag does not show the sid");
  const answer = clientResponseHeaders(
    {
      "cache-control": "public, max-age=31536000, immutable",
      etag: 'W/"app-1"',
      "last-modified": "Mon, 02 Nov 2026 10:00:00 GMT",
      expires: "Tue, 02 Nov 2027 10:00:00 GMT",
    },
    false,
    alice,
  );
  assert.deepEqual(answer, { "cache-control": "private, no-cache", etag: `W/"${alice}.app-1"` });
  assert.equal(
    clientResponseHeaders({ "cache-control": "No-Store" }, false, alice)["cache-control"],
    "no-store",
  );
  assert.equal(clientResponseHeaders({ etag: "unquoted" }, false, alice).etag, undefined);
  // Own origins (no tag) keep the environment's caching.
  assert.equal(clientResponseHeaders({ "cache-control": "public" }, true)["cache-control"], "public");

  const request = (headers: Record<string, string>) => {
    sessionRequestValidators(headers, bob);
    return headers;
  };
  assert.deepEqual(
    request({ "if-none-match": `W/"${alice}.app-1"`, "if-modified-since": "Mon, 02 Nov 2026 10:00:00 GMT" }),
    {},
    "alice's validators never reach bob's environment",
  );
  assert.deepEqual(request({ "if-none-match": `W/"${alice}.a", W/"${bob}.b", "c"` }), {
    "if-none-match": 'W/"b"',
  });
  assert.deepEqual(request({ "if-range": "Mon, 02 Nov 2026 10:00:00 GMT" }), {});
  assert.deepEqual(request({ "if-range": `"${bob}.x"`, "if-match": "*" }), {
    "if-range": '"x"',
    "if-match": "*",
  });
  // Write preconditions only make an environment refuse: kept (own tags unbound), never dropped.
  assert.deepEqual(
    request({ "if-match": `"${bob}.v2", "app-v7"`, "if-unmodified-since": "Mon, 02 Nov 2026 10:00:00 GMT" }),
    { "if-match": '"v2", "app-v7"', "if-unmodified-since": "Mon, 02 Nov 2026 10:00:00 GMT" },
  );
});

test("upstream errors: timeouts are 504s, the rest 502s, whichever client library reports them", () => {
  const kind = (code: string) => classifyUpstreamError(Object.assign(new Error(code), { code }));
  assert.equal(kind("UND_ERR_CONNECT_TIMEOUT"), "timeout");
  assert.equal(kind("UND_ERR_HEADERS_TIMEOUT"), "timeout");
  assert.equal(kind("UND_ERR_BODY_TIMEOUT"), "timeout");
  assert.equal(kind("ECONNREFUSED"), "refused");
  assert.equal(kind("UND_ERR_SOCKET"), "reset");
  assert.equal(kind("ECONNRESET"), "reset");
  assert.equal(kind("UND_ERR_INVALID_ARG"), "other");
});

test("trusted proxies are CIDRs, IPv4-mapped addresses included", () => {
  const trust = trustedProxies(["10.0.0.0/8", "fd00::/8", "192.0.2.1"]);
  assert.ok(trust.trusts("10.2.3.4"));
  assert.ok(trust.trusts("::ffff:10.2.3.4"));
  assert.ok(trust.trusts("fd00::1"));
  assert.ok(trust.trusts("192.0.2.1"));
  assert.ok(!trust.trusts("192.0.2.2"));
  assert.ok(!trust.trusts("11.0.0.1"));
  assert.ok(!trustedProxies([]).trusts("127.0.0.1"));
});

test("the resolver seam: cluster DNS in production, loopback-only overrides otherwise", async (t) => {
  assert.equal(
    clusterDnsResolver("cluster.local").resolve("ns", "code-a-svc", 8080)?.href,
    "http://code-a-svc.ns.svc.cluster.local:8080/",
  );
  const overrides = parseOverrides("ns/code-a-svc=http://127.0.0.1:8081, ns/other=http://[::1]:9000");
  const resolver = overrideResolver(overrides);
  assert.equal(resolver.resolve("ns", "code-a-svc", 80)?.href, "http://127.0.0.1:8081/");
  assert.equal(resolver.resolve("ns", "unknown", 80), undefined, "no fallback to cluster DNS");
  for (const bad of [
    "ns/x=http://10.0.0.1:80",
    "ns/x=http://198.18.0.10:80",
    "ns/x=https://127.0.0.1:8443",
    "ns/x=http://127.0.0.1",
    "x=http://127.0.0.1:1",
    "ns/x=http://127.0.0.1:1/path",
  ]) {
    assert.throws(() => parseOverrides(bad), Error, bad);
  }
  assert.throws(() => resolver.set("ns", "y", "http://198.18.0.1:80"), /loopback/);

  const keys = await testKeys(t);
  const file = join(keys.dir, "overrides.json");
  await writeFile(file, JSON.stringify({ "ns/a": "http://127.0.0.1:1001" }));
  // The resolver's warnings, the marker that it has read a broken edit.
  const warnings: string[] = [];
  const fromFile = fileOverrideResolver(
    file,
    pino({ level: "warn" }, { write: (line: string) => void warnings.push(line) }),
    50,
  );
  t.after(() => fromFile.close());
  assert.equal(fromFile.resolve("ns", "a", 80)?.port, "1001");
  await writeFile(file, JSON.stringify({ "ns/a": "http://127.0.0.1:1002", "ns/b": "http://127.0.0.1:1003" }));
  await eventually(
    "the file to be re-read",
    () => fromFile.resolve("ns", "b", 80)?.port === "1003",
    5000,
    20,
  );
  await writeFile(file, "{ broken");
  await eventually(
    "the broken edit to be read",
    () => warnings.some((w) => w.includes("not reloaded")),
    5000,
    20,
  );
  assert.equal(fromFile.resolve("ns", "a", 80)?.port, "1002", "a broken edit keeps the previous map");
});

test("origins", () => {
  const client = { trusted: false, peer: "127.0.0.1", proto: "http" as const, host: "code.example.org" };
  assert.ok(originAllowed("https://code.example.org", client, []));
  assert.ok(originAllowed(undefined, client, []));
  assert.ok(!originAllowed("https://code.example.org.evil.example", client, []));
  assert.ok(!originAllowed("null", client, []));
  assert.ok(originAllowed("https://portal.example.org", client, ["https://portal.example.org"]));
});

test("settings: every problem at once, with the variable to fix", () => {
  assert.throws(
    () =>
      loadProxyConfig({
        PROXY_UPSTREAM_OVERRIDES: "ns/a=http://10.0.0.1:80",
        PROXY_TRUSTED_PROXIES: "10.0.0.0/33",
      }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      const text = error.problems.join("\n");
      assert.match(text, /PROXY_SESSION_PUBLIC_KEYS_FILE/);
      assert.match(text, /PROXY_LOGIN_URL/);
      assert.match(text, /PROXY_UPSTREAM_OVERRIDES=.*loopback/);
      assert.match(text, /PROXY_TRUSTED_PROXIES=/);
      return true;
    },
  );
  assert.throws(
    () =>
      loadProxyConfig({
        PROXY_SESSION_PUBLIC_KEYS_FILE: "/k",
        PROXY_LOGIN_URL: "https://auth.example.org/login",
      }),
    /PROXY_HOST_TEMPLATES, PROXY_BASE_DOMAIN and\/or PROXY_DEFAULT_TEMPLATE/,
  );
  const config = loadProxyConfig({
    PROXY_SESSION_PUBLIC_KEYS_FILE: "/k",
    PROXY_LOGIN_URL: "https://auth.example.org/login",
    PROXY_BASE_DOMAIN: "*.Example.org",
    PROXY_UPSTREAM_TIMEOUT: "2m",
  });
  assert.equal(config.baseDomain, "example.org");
  assert.equal(config.upstreamTimeoutMs, 120_000);
  assert.equal(config.activityFlushMs, 30_000);
  assert.equal(config.adminPort, 9090);
});

test("settings: the session keys come from exactly one of PROXY_SESSION_JWKS_URL and PROXY_SESSION_PUBLIC_KEYS_FILE", () => {
  const base = { PROXY_LOGIN_URL: "https://auth.example.org/login", PROXY_BASE_DOMAIN: "example.org" };
  const url = "http://userland-auth.ide.svc.cluster.local:80/.well-known/jwks.json";
  const problems = (env: Record<string, string>) => {
    try {
      loadProxyConfig(env);
    } catch (error) {
      assert.ok(error instanceof ConfigError, String(error));
      return error.problems;
    }
    return [];
  };
  assert.deepEqual(loadProxyConfig({ ...base, PROXY_SESSION_JWKS_URL: url }).sessionKeys, {
    url: new URL(url),
  });
  assert.deepEqual(loadProxyConfig({ ...base, PROXY_SESSION_PUBLIC_KEYS_FILE: "/k" }).sessionKeys, {
    file: "/k",
  });
  const neither = problems(base);
  assert.equal(neither.length, 1, neither.join("\n"));
  assert.match(
    neither[0] ?? "",
    /set PROXY_SESSION_JWKS_URL .*\/\.well-known\/jwks\.json.* or PROXY_SESSION_PUBLIC_KEYS_FILE/,
  );
  assert.deepEqual(problems({ ...base, PROXY_SESSION_JWKS_URL: url, PROXY_SESSION_PUBLIC_KEYS_FILE: "/k" }), [
    "set PROXY_SESSION_JWKS_URL or PROXY_SESSION_PUBLIC_KEYS_FILE, not both",
  ]);
  // Reported together with the other problems, and only http(s) URLs.
  const together = problems({
    PROXY_SESSION_PUBLIC_KEYS_FILE: "/k",
    PROXY_SESSION_JWKS_URL: "ftp://auth/jwks.json",
  });
  assert.ok(together.some((p) => /PROXY_LOGIN_URL/.test(p)));
  assert.ok(together.some((p) => /PROXY_SESSION_JWKS_URL="ftp:.*http:\/\/ or https:\/\//.test(p)));
  assert.ok(together.some((p) => /not both/.test(p)));
  assert.match(problems({ ...base, PROXY_SESSION_JWKS_URL: "file:///etc/jwks.json" }).join(), /http/);
});

test("the starting page's script is allowed by exactly the hash in its CSP", () => {
  const page = startingPage({ template: "code", user: "alice", title: "VS Code" }, "Starting", "");
  const scripts = [...page.body.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1] ?? "");
  assert.equal(scripts.length, 1, "one inline script");
  const hash = `sha256-${createHash("sha256")
    .update(scripts[0] ?? "")
    .digest("base64")}`;
  const csp = pageHeaders(page.script)["content-security-policy"] ?? "";
  assert.ok(
    csp.includes(`script-src '${hash}'`),
    `the browser hashes the element's text as is; CSP was ${csp}, the element hashes to ${hash}`,
  );
});

test("the starting page says where the start is and, when it is stalled, why; its JSON too", () => {
  const status: Userland["status"] = {
    phase: "Starting",
    message: 'The container "ide" stopped with exit code 1.',
    conditions: [
      {
        type: "Stalled",
        status: "True",
        reason: "ContainerCrashing",
        message: "x",
        lastTransitionTime: "2026-01-02T03:04:00Z",
      },
    ],
    progress: {
      since: "2026-01-02T03:03:00Z",
      steps: [
        { step: "Scheduled", at: "2026-01-02T03:03:01Z" },
        { step: "VolumeBound", at: "2026-01-02T03:03:03Z" },
      ],
    },
  };
  const progress = progressText(status.progress, new Date("2026-01-02T03:03:13Z"));
  assert.equal(
    progress,
    "placed on a node 1 s, volume ready 2 s; pulling the image and starting the container (10 s so far)",
  );
  const words = startWords(status);
  assert.equal(isStalled(status), true);
  const page = startingPage(
    { template: "code", user: "alice", title: "VS Code" },
    "Starting",
    words.message,
    {
      progress,
      stalled: words.stalled,
      detail: words.detail,
    },
  );
  // The student reads plain words and what to do; the operator's own, for the administrator, a click away.
  assert.match(
    page.body,
    /<span id="message" class="problem">Your environment stops each time it starts\. Tell your course administrator/,
  );
  assert.match(page.body, /cannot start yet/);
  assert.doesNotMatch(page.body, /usually takes less than a minute/);
  assert.match(
    page.body,
    /<details id="details" >\s*<summary>Details for your course administrator<\/summary>\s*<span id="detail" class="status">The container &#34;ide&#34; stopped with exit code 1\.<\/span>/,
  );
  assert.equal(page.json.detail, 'The container "ide" stopped with exit code 1.');
  assert.match(page.body, /<p class="muted" id="progress">placed on a node 1 s, volume ready 2 s; pulling/);
  assert.equal(page.json.progress, progress);
  assert.equal(page.json.stalled, true);
  assert.equal(
    startDuration({
      since: "2026-01-02T03:03:00Z",
      steps: [{ step: "Reachable", at: "2026-01-02T03:03:21Z" }],
    }),
    "21 s",
  );
});

test("just after Ready: within the grace (0s: never), and only failures a retry cannot harm", () => {
  const since = Date.parse("2026-01-02T03:04:05Z");
  assert.equal(justReady(since, 30_000, since + 10_000), true);
  assert.equal(justReady(since, 30_000, since + 40_000), false);
  assert.equal(justReady(since, 0, since), false, "0s: never");
  assert.equal(justReady(undefined, 30_000, since), false, "not Ready");
  const get = { method: "GET" } as IncomingMessage;
  const post = { method: "POST" } as IncomingMessage;
  const error = (code: string) => Object.assign(new Error(code), { code });
  assert.equal(mayRetry(error("ECONNREFUSED"), post, false), true, "never connected: nothing was sent");
  assert.equal(mayRetry(error("ECONNREFUSED"), get, true), false, "a body is read once");
  assert.equal(mayRetry(error("ECONNRESET"), get, false), true);
  assert.equal(mayRetry(error("ECONNRESET"), post, false), false, "it may have reached the app");
  assert.equal(mayRetry(error("UND_ERR_HEADERS_TIMEOUT"), get, false), false, "slow is not refused");
});

test("a stopped environment's page says why: idle, the class being archived (issue 41 item 9), or just stopped", () => {
  const env = { template: "code", user: "alice", title: "VS Code" };
  const text = (reason?: string) =>
    String(stoppedPage(env, { canStart: true, returnPath: "/", reason }).body).replace(/\s+/g, " ");
  assert.match(text("IdleTimeout"), /without use/);
  assert.match(text("ClassArchive"), /end of term: your teacher is archiving the class/);
  assert.doesNotMatch(text(undefined), /archiving|without use/);
});
