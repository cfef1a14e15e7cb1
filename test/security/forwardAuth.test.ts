/**
 * Forward-auth for real: an admin's own proxy in front of a plain app, set up from the examples in
 * services/auth/README.md ("Behind an ingress (forward-auth)"), with the real auth service, a real
 * OpenID provider and a real browser, all on loopback. Two proxies, each from its example: Debian's
 * nginx (`auth_request`, the example's locations in a server block) and Traefik (built by
 * cluster/build.sh; the example's Middleware's forwardAuth, given to its file provider, which takes
 * the same settings as the Kubernetes CRD).
 *
 * Through each: a signed-out browser is sent to sign in and comes back to the app; signed in, the
 * app gets the identity headers the auth service names (X-User, and X-Auth-Request-User for
 * oauth2-proxy's apps); and copies of those headers that the client sends itself, in any
 * spelling (`X_User`, `X.User`, `x-auth-request-user`, ...) that CGI-style servers fold into the
 * same name, never reach the app.
 *
 * The browser resolves app.fa.test and traefik.fa.test to the two proxies and auth.fa.test to the
 * auth service (--host-resolver-rules); the provider is at 127.0.0.1; nothing else resolves.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, request, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { parse, stringify } from "yaml";
import { onDemandBinDir } from "../../cluster/onDemandTools.ts";
import { heldPort } from "../../cluster/ports.ts";
import { waitFor } from "../../cluster/processes.ts";
import { repoRoot } from "../../cluster/repoRoot.ts";
import { launchBrowser } from "../../cluster/harness/browser.ts";
import { startDevIdentityProvider, type DevIdentityProvider } from "../../dev/identityProvider.ts";
import {
  listen,
  newKeysFile,
  startAuth,
  tempDir,
  type RunningAuth,
} from "../../services/auth/test/support/auth.ts";
import { guideBlocks } from "../support/guide.ts";
import { expectOnPage } from "../support/nodeBrowser.ts";

const DOMAIN = "fa.test";
const AUTH_HOST = `auth.${DOMAIN}`;
const NGINX_HOST = `app.${DOMAIN}`;
const TRAEFIK_HOST = `traefik.${DOMAIN}`;
const GUIDE = join(repoRoot, "services", "auth", "README.md");
const SECTION = "## Behind an ingress (forward-auth)";
/** Where the examples send the forward-auth request and the app's traffic. */
const EXAMPLE_AUTH = /http:\/\/userland-auth(?:\.userland\.svc\.cluster\.local)?:8080/;
const EXAMPLE_APP = "proxy_pass http://app;";

/** What the identity headers are called, once a CGI-style server has folded `_` and `.` into `-`. */
const IDENTITY = ["x-user", "x-auth-request-user"];
const folded = (name: string) => name.toLowerCase().replaceAll(/[_.]/g, "-");
/** Copies a client sends itself, in the spellings that fold into the identity headers. */
const FORGED: Record<string, string> = {
  "X-User": "mallory",
  X_User: "mallory",
  "X.User": "mallory",
  "X-Auth-Request-User": "mallory",
  X_Auth_Request_User: "mallory",
  "x-auth_request.user": "mallory",
};

const NGINX = "/usr/sbin/nginx";

let work: string;
let idp: DevIdentityProvider;
let auth: RunningAuth;
let browser: Browser;
let app: { port: number; close(): Promise<void> };
const children: ChildProcess[] = [];
const releases: (() => void)[] = [];
const closers: (() => Promise<void>)[] = [];

/** The status of GET / at 127.0.0.1:`port` for `host`, or 0 when nothing answers. */
function statusOf(port: number, host: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: "127.0.0.1", port, path: "/", headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", () => resolve(0));
    req.end();
  });
}

/** A plain app: it shows the request's headers exactly as they arrived (name and value pairs). */
async function startApp(): Promise<{ port: number; close(): Promise<void> }> {
  const server = createServer((req: IncomingMessage, res) => {
    const pairs: [string, string][] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2)
      pairs.push([req.rawHeaders[i] ?? "", req.rawHeaders[i + 1] ?? ""]);
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    const json = JSON.stringify(pairs).replaceAll("<", "\\u003c");
    res.end(`<!doctype html><title>app</title><script id="headers" type="application/json">${json}</script>`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** nginx with the guide's locations as its one server, the example's addresses replaced by ours. */
async function startNginx(authPort: number): Promise<number> {
  const [example] = guideBlocks(GUIDE, SECTION, "nginx");
  assert.ok(
    example && EXAMPLE_AUTH.test(example) && example.includes(EXAMPLE_APP),
    "the guide's nginx example",
  );
  const locations = example
    .replace(EXAMPLE_AUTH, `http://127.0.0.1:${authPort}`)
    .replace(EXAMPLE_APP, `proxy_pass http://127.0.0.1:${app.port};`);
  const held = await heldPort();
  releases.push(() => held.release());
  const dir = join(work, "nginx");
  mkdirSync(dir);
  const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
    .map((t) => `  ${t}_temp_path ${dir}/${t};`)
    .join("\n");
  // Only what a server block needs around the example: nginx's defaults otherwise (among them
  // underscores_in_headers off and ignore_invalid_headers on).
  const config = `
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events {}
http {
  access_log off;
${temp}
  server {
    listen 127.0.0.1:${held.port};
    server_name ${NGINX_HOST};
${locations}
  }
}
`;
  writeFileSync(join(dir, "nginx.conf"), config);
  const nginx = spawn(NGINX, ["-c", join(dir, "nginx.conf"), "-p", dir, "-g", "daemon off;"], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  children.push(nginx);
  await waitFor("nginx", async () => (await statusOf(held.port, NGINX_HOST)) === 302, 10_000, {
    alive: () => nginx.exitCode === null,
    intervalMs: 100,
  });
  return held.port;
}

interface TraefikMiddleware {
  kind: string;
  metadata: { name: string };
  spec: { forwardAuth: Record<string, unknown> & { address: string } };
}

/** Traefik with the guide's Middleware in front of the app, through its file provider. */
async function startTraefik(authPort: number): Promise<number> {
  const middleware = guideBlocks(GUIDE, SECTION, "yaml")
    .map((text) => parse(text) as TraefikMiddleware)
    .find((o) => o.kind === "Middleware");
  assert.ok(middleware, "the guide's Traefik Middleware");
  const forwardAuth = {
    ...middleware.spec.forwardAuth,
    address: middleware.spec.forwardAuth.address.replace(EXAMPLE_AUTH, `http://127.0.0.1:${authPort}`),
  };
  assert.notEqual(
    forwardAuth.address,
    middleware.spec.forwardAuth.address,
    "the example's auth address replaced",
  );
  const dynamic = join(work, "traefik-dynamic.yaml");
  writeFileSync(
    dynamic,
    stringify({
      http: {
        middlewares: { [middleware.metadata.name]: { forwardAuth } },
        routers: {
          app: {
            rule: `Host(\`${TRAEFIK_HOST}\`)`,
            entryPoints: ["web"],
            middlewares: [middleware.metadata.name],
            service: "app",
          },
        },
        services: { app: { loadBalancer: { servers: [{ url: `http://127.0.0.1:${app.port}` }] } } },
      },
    }),
  );
  const held = await heldPort(2);
  releases.push(() => held.release());
  const [port, pingPort] = [held.port, held.port + 1];
  const traefikBin = join(await onDemandBinDir(), "traefik");
  const log = join(work, "traefik.log");
  const out = openSync(log, "a");
  const traefik = spawn(
    traefikBin,
    [
      `--entryPoints.web.address=127.0.0.1:${port}`,
      `--entryPoints.ping.address=127.0.0.1:${pingPort}`,
      "--ping.entryPoint=ping",
      `--providers.file.filename=${dynamic}`,
      "--global.checkNewVersion=false",
      "--global.sendAnonymousUsage=false",
    ],
    { stdio: ["ignore", out, out] },
  );
  children.push(traefik);
  await waitFor(
    "Traefik",
    async () => (await fetch(`http://127.0.0.1:${pingPort}/ping`).catch(() => undefined))?.status === 200,
    30_000,
    { alive: () => traefik.exitCode === null, logs: log, intervalMs: 100 },
  );
  // The file provider loads the router a moment after /ping answers.
  await waitFor(
    "Traefik's router for the app",
    async () => (await statusOf(port, TRAEFIK_HOST)) === 302,
    30_000,
    {
      alive: () => traefik.exitCode === null,
      logs: log,
      intervalMs: 100,
    },
  );
  return port;
}

before(
  async () => {
    work = mkdtempSync(join(tmpdir(), "userland-forward-auth-"));
    app = await startApp();
    const listener = await listen();
    const authPort = Number(new URL(listener.url).port);
    const keys = await tempDir();
    closers.push(
      () => keys.remove(),
      () => listener.close(),
    );
    idp = await startDevIdentityProvider({ port: 0, redirectUris: [`http://${AUTH_HOST}/callback/oidc`] });
    // As the guide says: the app hosts allowed as redirects, the cookie for their common parent.
    auth = await startAuth(listener, {
      AUTH_PUBLIC_URL: `http://${AUTH_HOST}/`,
      AUTH_SESSION_KEYS_FILE: (await newKeysFile(keys)).file,
      AUTH_OIDC_ISSUER: idp.issuer,
      AUTH_OIDC_CLIENT_ID: idp.clientId,
      AUTH_OIDC_CLIENT_SECRET: idp.clientSecret,
      AUTH_OIDC_ALLOW_HTTP: "true",
      AUTH_ALLOWED_REDIRECT_HOSTS: `${NGINX_HOST},${TRAEFIK_HOST}`,
      AUTH_COOKIE_DOMAIN: DOMAIN,
    });
    const nginxPort = await startNginx(authPort);
    const traefikPort = await startTraefik(authPort);
    browser = await launchBrowser([
      `--host-resolver-rules=MAP ${AUTH_HOST} 127.0.0.1:${authPort}, MAP ${NGINX_HOST} 127.0.0.1:${nginxPort}, ` +
        `MAP ${TRAEFIK_HOST} 127.0.0.1:${traefikPort}, EXCLUDE 127.0.0.1, MAP * ~NOTFOUND`,
    ]);
  },
  { timeout: 120_000 },
);

after(async () => {
  await browser?.close();
  for (const child of children) child.kill();
  for (const release of releases) release();
  await auth?.close();
  for (const close of closers) await close();
  await idp?.close();
  await app?.close();
  if (work) {
    // What the proxies said, for a failure's reader.
    for (const log of [join(work, "nginx", "error.log"), join(work, "traefik.log")])
      if (existsSync(log)) process.stdout.write(`# ${log}:\n${readFileSync(log, "utf8").slice(-3000)}\n`);
    rmSync(work, { recursive: true, force: true });
  }
});

/** The headers the app got for the page's last navigation. */
async function appHeaders(page: Page): Promise<[string, string][]> {
  const text = await page.locator("#headers").textContent({ timeout: 30_000 });
  return JSON.parse(text ?? "[]") as [string, string][];
}

for (const [proxy, host] of [
  ["nginx (auth_request)", NGINX_HOST],
  ["Traefik (ForwardAuth)", TRAEFIK_HOST],
] as const) {
  test(`${proxy} as the guide sets it up: signed out, the browser signs in and comes back; signed in, the app gets the identity headers and never a client's copies of them`, async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const url = `http://${host}/some/page?x=1`;
    await page.goto(url, { waitUntil: "commit" });
    // Signed out: at the provider's login page, by way of the auth host.
    await expectOnPage(page, "input[name=name]", "the provider's login page", 30_000, work);
    assert.ok(page.url().startsWith(idp.issuer), `at the provider: ${page.url()}`);
    await page.fill("input[name=name]", "alice");
    await Promise.all([page.waitForURL(url, { timeout: 30_000 }), page.click("button[type=submit]")]);

    const identity = (headers: [string, string][]) =>
      headers
        .filter(([name]) => IDENTITY.includes(folded(name)))
        .map(([name, value]) => [name.toLowerCase(), value]);
    assert.deepEqual(
      identity(await appHeaders(page)).sort(),
      [
        ["x-auth-request-user", "alice"],
        ["x-user", "alice"],
      ],
      "the app gets alice's identity",
    );

    // The client's own copies, every spelling, with her session: only the auth service's reach the app.
    await page.setExtraHTTPHeaders(FORGED);
    await page.goto(url, { waitUntil: "domcontentloaded" });
    const headers = await appHeaders(page);
    assert.ok(headers.length > 0, "the app answered");
    assert.deepEqual(
      identity(headers).sort(),
      [
        ["x-auth-request-user", "alice"],
        ["x-user", "alice"],
      ],
      `no client copy reaches the app: ${JSON.stringify(headers)}`,
    );

    // Signed out with forged copies: no page of the app, the login again.
    const stranger = await browser.newContext({ extraHTTPHeaders: FORGED });
    const strangerPage = await stranger.newPage();
    await strangerPage.goto(url, { waitUntil: "commit" });
    await expectOnPage(strangerPage, "input[name=name]", "the login page for a stranger", 30_000, work);
    assert.ok(strangerPage.url().startsWith(idp.issuer), `at the provider: ${strangerPage.url()}`);
    await stranger.close();
    await context.close();
  });
}
