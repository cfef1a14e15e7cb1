/**
 * GitHub login against a loopback stand-in for GitHub, with organization and e-mail domain
 * allow-lists, and auto-provisioning through a loopback stand-in for the user-management service.
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { SESSION_COOKIE } from "../../../lib/session.ts";
import {
  listen,
  newKeysFile,
  startAuth,
  tempDir,
  type Listener,
  type RunningAuth,
  type TempDir,
} from "./support/auth.ts";
import { Browser } from "./support/browser.ts";
import { startGitHubStandIn, type GitHubStandIn } from "./support/githubStandIn.ts";

const users = [
  {
    login: "Koba1t",
    id: 1001,
    orgs: ["other-org", "uni-cs"],
    emails: [
      { email: "koba@mail.example.com", verified: true, primary: true },
      { email: "koba@uni.example.org", verified: true },
    ],
  },
  {
    login: "outsider",
    id: 1002,
    orgs: ["other-org"],
    emails: [{ email: "out@uni.example.org", verified: true }],
  },
  {
    login: "unverified",
    id: 1003,
    orgs: ["uni-cs"],
    emails: [
      { email: "u@uni.example.org", verified: false },
      { email: "u@mail.example.com", verified: true },
    ],
  },
  {
    login: "flaky",
    id: 1004,
    orgs: ["uni-cs"],
    emails: [{ email: "flaky@uni.example.org", verified: true }],
  },
];

interface ProvisionCall {
  authorization: string | undefined;
  contentType: string | undefined;
  body: unknown;
}

async function startUserManagerStandIn() {
  const calls: ProvisionCall[] = [];
  const created = new Set<string>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/api/v1/userlands") return res.writeHead(404).end();
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { user: string; templateName: string };
      calls.push({
        authorization: req.headers.authorization,
        contentType: req.headers["content-type"],
        body,
      });
      if (req.headers.authorization !== "Bearer projected-sa-token") return res.writeHead(401).end();
      if (body.user === "github:flaky")
        return res.writeHead(500, { "content-type": "text/plain" }).end("etcd is on fire");
      const status = created.has(body.user) ? 409 : 201;
      created.add(body.user);
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ user: body.user }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const APP = "https://jupyter.apps.example.test/tree";

describe("GitHub login against a stand-in", () => {
  let dir: TempDir;
  let listener: Listener;
  let github: GitHubStandIn;
  let userManager: Awaited<ReturnType<typeof startUserManagerStandIn>>;
  let auth: RunningAuth;

  before(async () => {
    dir = await tempDir();
    const { file } = await newKeysFile(dir);
    const tokenFile = await dir.file("token", "projected-sa-token\n");
    listener = await listen();
    github = await startGitHubStandIn(users);
    userManager = await startUserManagerStandIn();
    auth = await startAuth(listener, {
      AUTH_SESSION_KEYS_FILE: file,
      AUTH_GITHUB_CLIENT_ID: github.clientId,
      AUTH_GITHUB_CLIENT_SECRET: github.clientSecret,
      AUTH_GITHUB_URL: github.url,
      AUTH_GITHUB_API_URL: github.url,
      AUTH_GITHUB_USER_PREFIX: "github:",
      AUTH_ALLOWED_ORGS: "Uni-CS",
      AUTH_ALLOWED_DOMAINS: "uni.example.org",
      AUTH_ALLOWED_REDIRECT_HOSTS: "*.apps.example.test",
      AUTH_PROVISION_URL: userManager.url,
      AUTH_PROVISION_TEMPLATE: "code-server",
      AUTH_PROVISION_TOKEN_FILE: tokenFile,
    });
  });
  after(async () => {
    await auth?.close();
    await listener?.close();
    await github?.close();
    await userManager?.close();
    await dir?.remove();
  });

  async function login(browser: Browser, as: string) {
    github.signInAs(as);
    return browser.navigate(new URL(`login?rd=${encodeURIComponent(APP)}`, auth.url));
  }

  test("a member of an allowed org logs in; the identity is the prefixed GitHub login", async () => {
    const browser = new Browser();
    const before = userManager.calls.length;
    const { offsite, chain } = await login(browser, "Koba1t");
    assert.equal(offsite?.href, APP, `ends at the app, chain: ${chain.join(" -> ")}`);
    assert.ok(chain.some((u) => u.startsWith(`${github.url}/login/oauth/authorize`)));
    const authorize = new URL(chain.find((u) => u.startsWith(`${github.url}/login/oauth/authorize`)) ?? "");
    assert.equal(authorize.searchParams.get("code_challenge_method"), "S256");
    assert.equal(authorize.searchParams.get("redirect_uri"), `${auth.url}callback/github`);
    assert.deepEqual(github.lastScope?.split(" ").sort(), ["read:org", "read:user", "user:email"]);

    const whoami = (await (await browser.fetch(new URL("whoami", auth.url))).json()) as { user: string };
    assert.equal(whoami.user, "github:Koba1t");
    const fa = await browser.fetch(new URL("forward-auth", auth.url));
    assert.equal(fa.headers.get("x-user"), "github:Koba1t");
    assert.ok(
      github.requests.some((r) => r.startsWith("GET /user/orgs?per_page=100&page=2")),
      "follows pagination",
    );

    // Auto-provisioning: asked the user-manager once, with the bearer token from the file.
    const call = userManager.calls[before];
    assert.equal(userManager.calls.length, before + 1);
    assert.equal(call?.authorization, "Bearer projected-sa-token");
    assert.equal(call?.contentType, "application/json");
    assert.deepEqual(call?.body, { user: "github:Koba1t", templateName: "code-server", ifUserHasNone: true });

    // Second login: the Userland exists (409), which is fine.
    const second = await login(new Browser(), "Koba1t");
    assert.equal(second.offsite?.href, APP);
    assert.equal(userManager.calls.length, before + 2);
    const metrics = await auth.metricsText();
    assert.match(metrics, /userland_auth_provision_total\{result="created"\} 1/);
    assert.match(metrics, /userland_auth_provision_total\{result="exists"\} [1-9]/);
  });

  test("a GitHub account outside the allowed orgs is refused with a page that says why", async () => {
    const browser = new Browser();
    const before = userManager.calls.length;
    const { response, offsite } = await login(browser, "outsider");
    assert.equal(offsite, undefined);
    assert.equal(response.status, 403);
    assert.match(await response.text(), /not a member of any organization allowed/);
    assert.equal(browser.cookie(SESSION_COOKIE), undefined);
    assert.equal(userManager.calls.length, before, "refused users are not provisioned");
  });

  test("a GitHub account without a verified address in an allowed domain is refused", async () => {
    const browser = new Browser();
    const { response } = await login(browser, "unverified");
    assert.equal(response.status, 403);
    assert.match(
      await response.text(),
      /e-mail domain \(mail\.example\.com\) is not one of the domains allowed/,
    );
    assert.equal(browser.cookie(SESSION_COOKIE), undefined);
  });

  test("a failing user-management service does not block the login", async () => {
    const browser = new Browser();
    const { offsite } = await login(browser, "flaky");
    assert.equal(offsite?.href, APP);
    assert.ok(browser.cookie(SESSION_COOKIE));
    const metrics = await auth.metricsText();
    assert.match(metrics, /userland_auth_provision_total\{result="failed"\} 1/);
  });

  test("a reused GitHub code, a wrong state and a GitHub error give error pages", async () => {
    const browser = new Browser();
    github.signInAs("Koba1t");
    const { url: callback } = await browser.navigate(new URL("login", auth.url), {
      stopAt: (u) => u.pathname === "/callback/github",
    });
    assert.equal(callback.pathname, "/callback/github");
    const [name, stored] = [...browser.jar.entries()].find(([n]) => n.startsWith("userland_login_")) ?? [];
    assert.ok(name && stored);
    assert.equal((await browser.fetch(callback)).status, 302);

    const attacker = new Browser();
    attacker.setCookie(name, stored.value, stored.path);
    const replay = await attacker.fetch(callback);
    assert.equal(replay.status, 400);
    assert.match(await replay.text(), /bad_verification_code/);
    assert.equal(attacker.cookie(SESSION_COOKIE), undefined);

    const forged = new URL(callback);
    forged.searchParams.set("state", "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB");
    assert.equal((await new Browser().fetch(forged)).status, 400);

    const denied = new Browser();
    github.signInAs("Koba1t");
    const { url: cb } = await denied.navigate(new URL("login", auth.url), {
      stopAt: (u) => u.pathname === "/callback/github",
    });
    const error = new URL(cb);
    error.searchParams.delete("code");
    error.searchParams.set("error", "access_denied");
    const response = await denied.fetch(error);
    assert.equal(response.status, 400);
    assert.match(await response.text(), /access_denied/);
    assert.equal(denied.cookie(SESSION_COOKIE), undefined);
  });
});
