/**
 * The shared lab computer attack (issue 13 item 1) in a real browser (chromium), against the real
 * auth service (signing in at the local OpenID provider), the real proxy, operator and control
 * plane, once per origin mode. One browser profile is shared by two students:
 *
 * 1. alice signs in; her environment (code she controls) sets `userland_session=<her token>;
 *    path=/somewhere` on the whole domain from JavaScript and registers a service worker;
 * 2. alice signs out; bob signs in on the same browser;
 * 3. bob's requests under /somewhere must reach bob's environment, never alice's, and alice's
 *    service worker must never answer them;
 * 4. (issue 29 item 1) alice's page loaded `/static/app.js`, which her environment answers with
 *    `Cache-Control: public, max-age=31536000, immutable` (and the ETag and Last-Modified a static
 *    server of the same image would give every student's copy): bob's page must run bob's file,
 *    neither from the browser's cache nor revalidated with alice's validators.
 *
 * Host names are under `userland.localhost`: browsers treat *.localhost as secure contexts, which
 * service workers and Clear-Site-Data need, and map them to 127.0.0.1 (the resolver rule says so).
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test, type TestContext } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { startDevIdentityProvider } from "../../dev/identityProvider.ts";
import { generateSigningKey } from "../../lib/session.ts";
import { listen, startAuth, tempDir, writeKeys } from "../../services/auth/test/support/auth.ts";
import { startProxy, testKeys } from "../../services/proxy/test/support.ts";
import { launchBrowser } from "../../cluster/harness/browser.ts";
import { testNamespace } from "../support/cluster.ts";
import { installCrds } from "../support/operator.ts";
import { createTemplate, createUserland, markReady, simpleTemplateSpec } from "../support/resources.ts";

const DOMAIN = "userland.localhost";
let browser: Browser;

before(async () => {
  browser = await launchBrowser([`--host-resolver-rules=MAP *.${DOMAIN} 127.0.0.1`]);
});
after(async () => {
  await browser?.close();
});

/** A student's environment: pages that name their owner, and the attack for the one that runs it. */
async function environment(t: TestContext, owner: string): Promise<{ url: string; seenBy: string[] }> {
  const seenBy: string[] = [];
  const server: Server = createServer((req, res) => {
    const xUser = String(req.headers["x-user"] ?? "");
    seenBy.push(xUser);
    const path = new URL(`http://x${req.url ?? "/"}`).pathname;
    if (path === "/sw.js") {
      // Answers every request in its scope itself: whoever uses this browser next talks to it.
      res.writeHead(200, { "content-type": "text/javascript", "service-worker-allowed": "/" });
      res.end(`self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));
self.addEventListener("fetch", (e) => e.respondWith(new Response(
  '<p id="owner">intercepted by ${owner}\\'s service worker</p>', { headers: { "content-type": "text/html" } })));`);
      return;
    }
    if (path === "/static/app.js") {
      // As a static file server answers: the same validators for every student's copy of the
      // image's file, so a conditional request with alice's would get a 304 from bob's environment.
      const validators = { etag: '"app-1"', "last-modified": "Mon, 02 Nov 2026 10:00:00 GMT" };
      if (req.headers["if-none-match"] === validators.etag || req.headers["if-modified-since"]) {
        res.writeHead(304, validators);
        res.end();
        return;
      }
      res.writeHead(200, {
        "content-type": "text/javascript",
        "cache-control": "public, max-age=31536000, immutable",
        ...validators,
      });
      res.end(`document.getElementById("script").textContent = "${owner}";`);
      return;
    }
    if (path === "/cached") {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<p id="owner">${owner}</p><p id="script"></p><script src="/static/app.js"></script>`);
      return;
    }
    if (path === "/attack") {
      // The token arrives in the query: alice copied her own cookie, as any student can.
      const token = new URL(`http://x${req.url ?? "/"}`).searchParams.get("token") ?? "";
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<p id="owner">${owner}</p><p id="result"></p><script>
document.cookie = "userland_session=${token}; path=/somewhere; domain=${DOMAIN}";
navigator.serviceWorker.register("/sw.js", { scope: "/" }).then(
  () => navigator.serviceWorker.ready.then(() => { document.getElementById("result").textContent = "registered"; }),
  (e) => { document.getElementById("result").textContent = "refused: " + e.message; });
</script>`);
      return;
    }
    res.writeHead(200, { "content-type": "text/html" });
    res.end(`<p id="owner">${owner}</p><p id="x-user">${xUser}</p>`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seenBy };
}

for (const mode of ["shared", "perUser"] as const) {
  test(`shared computer, PROXY_ORIGINS=${mode}: alice's planted cookie and service worker never see bob's traffic`, async (t) => {
    const ns = await testNamespace(t, `e2e-lab-${mode.toLowerCase()}`);
    await installCrds();
    await createTemplate(ns, "code", simpleTemplateSpec("registry.invalid/code:1"));
    const envs = { alice: await environment(t, "alice"), bob: await environment(t, "bob") };
    for (const user of ["alice", "bob"] as const) await createUserland(ns, `code-${user}`, user, "code");

    // The auth service and the proxy share one signing key (the proxy gets only its public half).
    const dir = await tempDir();
    t.after(() => dir.remove());
    const jwk = await generateSigningKey("lab");
    const keys = await testKeys(t, [jwk]);
    const authListener = await listen();
    t.after(() => authListener.close());
    const authPort = new URL(authListener.url).port;
    const authUrl = `http://auth.${DOMAIN}:${authPort}`;
    const idp = await startDevIdentityProvider({ port: 0, redirectUris: [`${authUrl}/callback/oidc`] });
    t.after(() => idp.close());
    // The proxy's port must be known to the auth service: the proxy listens first.
    const proxyEnv = { PROXY_BASE_DOMAIN: DOMAIN, PROXY_ORIGINS: mode, PROXY_HOST_TEMPLATES: "" };
    const proxy = await startProxy(t, ns, keys, { ...proxyEnv, PROXY_LOGIN_URL: `${authUrl}/login` });
    const codeHost = `code.${DOMAIN}:${proxy.port}`;
    const auth = await startAuth(authListener, {
      AUTH_PUBLIC_URL: `${authUrl}/`,
      AUTH_SESSION_KEYS_FILE: await writeKeys(dir, [jwk]),
      AUTH_COOKIE_DOMAIN: DOMAIN,
      AUTH_ALLOWED_REDIRECT_HOSTS: `*.${DOMAIN}:${proxy.port}`,
      AUTH_DEFAULT_REDIRECT: `http://${codeHost}/`,
      AUTH_CLEAR_SITE_URL: `http://${codeHost}/_userland/signed-out`,
      AUTH_OIDC_ISSUER: idp.issuer,
      AUTH_OIDC_ALLOW_HTTP: "true",
      AUTH_OIDC_CLIENT_ID: idp.clientId,
      AUTH_OIDC_CLIENT_SECRET: idp.clientSecret,
    });
    t.after(() => auth.close());
    // The status the operator would write (this test is about the browser, not the operator).
    for (const user of ["alice", "bob"] as const) {
      await markReady(ns, `code-${user}`, { name: `env-${user}`, port: 8080 });
      proxy.resolver.set(ns, `env-${user}`, envs[user].url);
    }
    const envOrigin = (user: string) =>
      mode === "perUser" ? `http://code-${user}--code.${DOMAIN}:${proxy.port}` : `http://${codeHost}`;

    // One browser profile for both students: a lab computer.
    const context: BrowserContext = await browser.newContext();
    t.after(() => context.close());
    const page: Page = await context.newPage();
    const signIn = async (name: string) => {
      await page.goto(`http://${codeHost}/`);
      await page.waitForSelector("input[name=name]").catch(async (error: unknown) => {
        throw new Error(`no login page at ${page.url()}: ${(await page.content()).slice(0, 600)}`, {
          cause: error,
        });
      });
      await page.fill("input[name=name]", name);
      await Promise.all([
        page.waitForURL((u) => u.origin === envOrigin(name), { timeout: 30_000 }),
        page.click("button[type=submit]"),
      ]);
      await page.waitForSelector("#owner");
      assert.equal(await page.textContent("#owner"), name, `${name} is in their own environment`);
    };

    await signIn("alice");
    const scriptOf = async (user: string) => {
      await page.goto(`${envOrigin(user)}/cached`);
      await page.waitForFunction('(document.getElementById("script")?.textContent ?? "") !== ""');
      return page.textContent("#script");
    };
    assert.equal(await scriptOf("alice"), "alice", "alice's page runs her own file (now in the cache)");
    const aliceToken = (await context.cookies()).find((c) => c.name === "userland_session")?.value;
    assert.ok(aliceToken, "alice has a session");
    await page.goto(`${envOrigin("alice")}/attack?token=${aliceToken}`);
    await page.waitForFunction('(document.getElementById("result")?.textContent ?? "") !== ""');
    const registration = (await page.textContent("#result")) ?? "";
    if (mode === "shared") assert.match(registration, /^refused/, "no service worker on a shared origin");
    else assert.equal(registration, "registered", "alice's own origin may have one (it is hers alone)");

    // alice signs out at the auth service; the browser passes through every Template host.
    await page.goto(`${authUrl}/logout`);
    // The chain ends at the default landing page, the code host, which (signed out) sends the
    // browser to sign in, and the provider asks for a name again (prompt=login after a sign-out).
    await page.click("button[type=submit]");
    await page.waitForSelector("input[name=name]", { timeout: 30_000 });
    const aliceSeen = envs.alice.seenBy.length;

    await signIn("bob");
    for (const path of ["/somewhere", "/somewhere/deeper", "/"]) {
      await page.goto(`${envOrigin("bob")}${path}`);
      await page.waitForSelector("#owner");
      assert.equal(
        await page.textContent("#owner"),
        "bob",
        `${path}: bob's environment, not alice's nor her worker`,
      );
      assert.equal(await page.textContent("#x-user"), "bob");
    }
    assert.equal(await scriptOf("bob"), "bob", "bob's page runs bob's file, not alice's cached one");
    const bobsWorkers = await page.evaluate<string[]>(
      "navigator.serviceWorker.getRegistrations().then((rs) => rs.map((r) => r.scope))",
    );
    assert.deepEqual(bobsWorkers, [], "no service worker on bob's origin");
    assert.equal(envs.alice.seenBy.length, aliceSeen, "alice's environment saw nothing of bob's");
    assert.ok(!envs.alice.seenBy.includes("bob"));
    const planted = (await context.cookies()).filter((c) => c.name === "userland_session" && c.path !== "/");
    assert.deepEqual(planted, [], "the planted cookie is gone");
  });
}
