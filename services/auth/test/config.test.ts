/**
 * Start-up configuration: every problem is reported at once and names the variable to set; the
 * entry point prints --help, refuses bad settings, serves, and shuts down on SIGTERM.
 */
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { ConfigError } from "../../../lib/config.ts";
import { loadAuthConfig, configWarnings } from "../config.ts";
import { sessionCookieOptions } from "../context.ts";
import { newKeysFile, tempDir, type TempDir } from "./support/auth.ts";

const base = {
  AUTH_PUBLIC_URL: "https://auth.example.org",
  AUTH_SESSION_KEYS_FILE: "/etc/userland/keys.json",
  AUTH_GITHUB_CLIENT_ID: "id",
  AUTH_GITHUB_CLIENT_SECRET: "secret",
};

function problems(env: Record<string, string>): string[] {
  try {
    loadAuthConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.problems;
  }
  assert.fail("expected a configuration error");
}

function assertNames(env: Record<string, string>, ...names: string[]) {
  const text = problems(env).join("\n");
  for (const name of names) assert.match(text, new RegExp(name), `mentions ${name}:\n${text}`);
}

describe("auth configuration", () => {
  test("an empty environment names every required variable and the provider settings, at once", () => {
    assertNames(
      {},
      "AUTH_PUBLIC_URL",
      "AUTH_SESSION_KEYS_FILE",
      "AUTH_OIDC_ISSUER",
      "AUTH_OIDC_CLIENT_ID",
      "AUTH_GITHUB_CLIENT_ID",
    );
  });

  test("a provider without its secrets names them", () => {
    const { AUTH_GITHUB_CLIENT_ID: _id, AUTH_GITHUB_CLIENT_SECRET: _secret, ...rest } = base;
    assertNames(
      { ...rest, AUTH_OIDC_ISSUER: "https://idp.example.org" },
      "AUTH_OIDC_CLIENT_ID",
      "AUTH_OIDC_CLIENT_SECRET",
    );
    assertNames({ ...rest, AUTH_OIDC_CLIENT_ID: "x" }, "AUTH_OIDC_ISSUER", "AUTH_OIDC_CLIENT_SECRET");
    assertNames({ ...rest, AUTH_GITHUB_CLIENT_ID: "x" }, "AUTH_GITHUB_CLIENT_SECRET");
    assertNames({ ...rest, AUTH_GITHUB_CLIENT_SECRET: "x" }, "AUTH_GITHUB_CLIENT_ID");
  });

  test("an http issuer needs an explicit opt-in, and scopes need openid", () => {
    const oidc = {
      ...base,
      AUTH_OIDC_ISSUER: "http://idp.example.org",
      AUTH_OIDC_CLIENT_ID: "c",
      AUTH_OIDC_CLIENT_SECRET: "s",
    };
    assertNames(
      { ...oidc, AUTH_OIDC_USER_PREFIX: "uni:", AUTH_GITHUB_USER_PREFIX: "github:" },
      "AUTH_OIDC_ALLOW_HTTP",
    );
    assertNames(
      {
        ...oidc,
        AUTH_OIDC_ALLOW_HTTP: "true",
        AUTH_OIDC_SCOPES: "profile,email",
        AUTH_OIDC_USER_PREFIX: "uni:",
        AUTH_GITHUB_USER_PREFIX: "github:",
      },
      "AUTH_OIDC_SCOPES",
    );
  });

  test("two providers need distinct prefixes, so one name at two providers is never one user", () => {
    const both = {
      ...base,
      AUTH_OIDC_ISSUER: "https://idp.example.org",
      AUTH_OIDC_CLIENT_ID: "c",
      AUTH_OIDC_CLIENT_SECRET: "s",
    };
    assertNames(both, "AUTH_OIDC_USER_PREFIX", "AUTH_GITHUB_USER_PREFIX");
    assertNames(
      { ...both, AUTH_OIDC_USER_PREFIX: "gh", AUTH_GITHUB_USER_PREFIX: "gh:" },
      "AUTH_OIDC_USER_PREFIX",
    );
    const config = loadAuthConfig({
      ...both,
      AUTH_OIDC_USER_PREFIX: "uni:",
      AUTH_GITHUB_USER_PREFIX: "github:",
    });
    assert.ok(config.oidc && config.github);
  });

  test("bad values name their variable", () => {
    assertNames({ ...base, AUTH_SESSION_TTL: "forever" }, "AUTH_SESSION_TTL");
    assertNames({ ...base, AUTH_SESSION_TTL: "10s" }, "AUTH_SESSION_TTL");
    assertNames({ ...base, AUTH_PUBLIC_URL: "not a url" }, "AUTH_PUBLIC_URL");
    assertNames({ ...base, AUTH_PUBLIC_URL: "http://auth.example.org" }, "AUTH_COOKIE_SECURE");
    assertNames({ ...base, AUTH_COOKIE_DOMAIN: "other.org" }, "AUTH_COOKIE_DOMAIN");
    assertNames(
      { ...base, AUTH_ALLOWED_REDIRECT_HOSTS: "https://example.org/" },
      "AUTH_ALLOWED_REDIRECT_HOSTS",
    );
    assertNames({ ...base, AUTH_DEFAULT_REDIRECT: "https://evil.example.com/" }, "AUTH_DEFAULT_REDIRECT");
    assertNames({ ...base, AUTH_ALLOWED_DOMAINS: "not a domain" }, "AUTH_ALLOWED_DOMAINS");
    assertNames({ ...base, AUTH_GITHUB_USER_PREFIX: " x" }, "AUTH_GITHUB_USER_PREFIX");
    assertNames({ ...base, AUTH_GITHUB_IDENTITY: "email" }, "AUTH_GITHUB_IDENTITY");
    assertNames({ ...base, AUTH_PROVISION_URL: "http://user-manager" }, "AUTH_PROVISION_TEMPLATE");
    assertNames(
      { ...base, AUTH_PROVISION_URL: "http://user-manager", AUTH_PROVISION_TEMPLATE: "Bad_Name" },
      "AUTH_PROVISION_TEMPLATE",
    );
  });

  test("the admin listener is 0.0.0.0:9090 unless set, and never the public port", () => {
    const config = loadAuthConfig(base);
    assert.deepEqual([config.adminHost, config.adminPort], ["0.0.0.0", 9090]);
    assert.deepEqual(problems({ ...base, AUTH_PORT: "9090" }), ["AUTH_PORT and AUTH_ADMIN_PORT must differ"]);
    assertNames({ ...base, AUTH_ADMIN_PORT: "metrics" }, "AUTH_ADMIN_PORT");
    // Another address, or any free port, is no collision.
    loadAuthConfig({ ...base, AUTH_PORT: "9090", AUTH_ADMIN_HOST: "127.0.0.1" });
    loadAuthConfig({ ...base, AUTH_PORT: "0", AUTH_ADMIN_PORT: "0" });
  });

  test("a valid configuration is normalized", () => {
    const config = loadAuthConfig({
      ...base,
      AUTH_PUBLIC_URL: "https://auth.example.org/prefix",
      AUTH_COOKIE_DOMAIN: ".Example.org",
      AUTH_SESSION_TTL: "8h",
      AUTH_ALLOWED_REDIRECT_HOSTS: "*.example.org",
      AUTH_ALLOWED_ORGS: "uni-cs",
    });
    assert.equal(config.publicUrl.href, "https://auth.example.org/prefix/");
    assert.equal(config.sessionTtlSeconds, 8 * 3600);
    assert.equal(config.cookie.domain, "example.org");
    assert.equal(config.cookie.secure, true, "Secure unless turned off");
    assert.equal(config.redirects.defaultRedirect, "https://auth.example.org/prefix/");
    assert.equal(config.github?.readOrgs, true);
    assert.deepEqual(sessionCookieOptions(config, 60), {
      httpOnly: true,
      secure: true,
      sameSite: "lax",
      path: "/",
      domain: "example.org",
      maxAge: 60,
    });
    assert.deepEqual(configWarnings(config), []);
    assert.match(configWarnings(loadAuthConfig(base)).join("\n"), /open to every GitHub account/);
  });
});

describe("services/auth/main.ts", () => {
  const main = join(import.meta.dirname, "../main.ts");
  const run = promisify(execFile);
  let dir: TempDir;
  before(async () => {
    dir = await tempDir();
  });
  after(async () => {
    await dir?.remove();
  });

  test("--help lists every setting", async () => {
    const { stdout } = await run(process.execPath, [main, "--help"]);
    for (const name of [
      "AUTH_PUBLIC_URL",
      "AUTH_SESSION_KEYS_FILE",
      "AUTH_OIDC_ISSUER",
      "AUTH_GITHUB_CLIENT_ID",
      "AUTH_ALLOWED_REDIRECT_HOSTS",
      "AUTH_PROVISION_URL",
      "AUTH_ADMIN_HOST",
      "AUTH_ADMIN_PORT",
    ]) {
      assert.match(stdout, new RegExp(name));
    }
  });

  test("bad settings stop it with exit code 2 and a message that names them", async () => {
    const error = (await run(process.execPath, [main], { env: { PATH: process.env.PATH } }).then(
      () => assert.fail("should exit non-zero"),
      (e: unknown) => e,
    )) as { code: number; stderr: string };
    assert.equal(error.code, 2);
    assert.match(error.stderr, /AUTH_PUBLIC_URL/);
    assert.match(error.stderr, /AUTH_SESSION_KEYS_FILE/);

    const keys = (await run(process.execPath, [main], {
      env: { PATH: process.env.PATH, ...base, AUTH_SESSION_KEYS_FILE: join(dir.path, "missing.json") },
    }).then(
      () => assert.fail("should exit non-zero"),
      (e: unknown) => e,
    )) as { code: number; stderr: string };
    assert.equal(keys.code, 2);
    assert.match(keys.stderr, /AUTH_SESSION_KEYS_FILE=.*missing\.json.*unusable/);
  });

  test("serves, /metrics only on its admin port, then shuts down cleanly on SIGTERM", async (t) => {
    const { file } = await newKeysFile(dir);
    const child = spawn(process.execPath, [main], {
      env: {
        PATH: process.env.PATH,
        ...base,
        AUTH_SESSION_KEYS_FILE: file,
        AUTH_HOST: "127.0.0.1",
        AUTH_PORT: "0",
        AUTH_ADMIN_HOST: "127.0.0.1",
        AUTH_ADMIN_PORT: "0",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    // A failed assertion must not leave the service running (the test would wait for it).
    t.after(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    });
    let out = "";
    const address = await new Promise<string>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        const m = /"address":"(http:\/\/127\.0\.0\.1:\d+)".*auth service listening/.exec(out);
        if (m?.[1]) resolve(m[1]);
      });
      void exited.then(() => reject(new Error(`exited early: ${out}`)));
    });
    const health = await fetch(`${address}/healthz`);
    assert.equal(health.status, 200);
    assert.equal((await fetch(`${address}/readyz`)).status, 200, "the kubelet's probes stay on AUTH_PORT");
    // AUTH_PORT is what the Ingress routes: auth.<baseDomain>/metrics must show the internet nothing.
    const publicMetrics = await fetch(`${address}/metrics`);
    assert.equal(publicMetrics.status, 404);
    assert.doesNotMatch(await publicMetrics.text(), /userland_auth_/);

    const adminUrl = /"adminUrl":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(out)?.[1];
    assert.ok(adminUrl, `the admin URL is logged: ${out}`);
    assert.notEqual(adminUrl, address);
    const metrics = await fetch(`${adminUrl}/metrics`);
    assert.equal(metrics.status, 200);
    const text = await metrics.text();
    assert.match(
      text,
      /userland_auth_process_cpu_seconds_total/,
      "default process metrics in the real service",
    );
    assert.match(text, /^# TYPE userland_auth_logins_total counter$/m, "the service's own metrics");
    assert.equal((await fetch(`${adminUrl}/healthz`)).status, 200);
    child.kill("SIGTERM");
    assert.equal(await exited, 0);
    assert.match(out, /shutting down/);
  });
});
