/**
 * Runs the auth service in-process on 127.0.0.1 for tests. The HTTP server listens first so the
 * service's public URL (and thus its callback URLs) is known before the app and the providers that
 * must know those URLs are configured.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JWK } from "jose";
import { createLogger } from "../../../../lib/logger.ts";
import { generateSigningKey } from "../../../../lib/session.ts";
import { buildApp, type AuthApp } from "../../app.ts";
import { loadAuthConfig } from "../../config.ts";
import { createMetrics } from "../../metrics.ts";
import { startOidcProvider, type AccountClaims, type TestOidcProvider } from "./oidcProvider.ts";

export interface Listener {
  server: Server;
  url: string;
  close(): Promise<void>;
}

/** A loopback HTTP server on a free port (or `port`) whose handler is attached later. */
export async function listen(port = 0): Promise<Listener> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return {
    server,
    url,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface TempDir {
  path: string;
  file(name: string, content: string): Promise<string>;
  remove(): Promise<void>;
}

export async function tempDir(): Promise<TempDir> {
  const path = await mkdtemp(join(tmpdir(), "userland-auth-test-"));
  return {
    path,
    async file(name, content) {
      const file = join(path, name);
      await writeFile(file, content, { mode: 0o600 });
      return file;
    },
    remove: () => rm(path, { recursive: true, force: true }),
  };
}

export async function writeKeys(dir: TempDir, keys: JWK[], name = "keys.json"): Promise<string> {
  return dir.file(name, JSON.stringify({ keys }));
}

export async function newKeysFile(dir: TempDir, name = "keys.json"): Promise<{ file: string; keys: JWK[] }> {
  const keys = [await generateSigningKey()];
  return { file: await writeKeys(dir, keys, name), keys };
}

export interface RunningAuth {
  url: string;
  app: AuthApp;
  /** The app's /metrics page, as main.ts serves it on the admin port (never on `url`). */
  metricsText(): Promise<string>;
  close(): Promise<void>;
}

/** Builds the app from `env` (AUTH_PUBLIC_URL is filled in) and serves it on `listener`. */
export async function startAuth(listener: Listener, env: Record<string, string>): Promise<RunningAuth> {
  const config = loadAuthConfig({ AUTH_PUBLIC_URL: listener.url, AUTH_COOKIE_SECURE: "false", ...env });
  const metrics = createMetrics();
  const app = await buildApp(config, {
    log: createLogger("auth-test", process.env.TEST_LOG_LEVEL ?? "silent"),
    metrics,
  });
  await app.ready();
  const handler = (req: Parameters<typeof app.routing>[0], res: Parameters<typeof app.routing>[1]) =>
    app.routing(req, res);
  listener.server.on("request", handler);
  return {
    url: listener.url,
    app,
    metricsText: () => metrics.registry.metrics(),
    async close() {
      listener.server.off("request", handler);
      await app.close();
    },
  };
}

export interface AuthWithOidc {
  dir: TempDir;
  keysFile: string;
  idp: TestOidcProvider;
  auth: RunningAuth;
  close(): Promise<void>;
}

/**
 * The auth service signing in with a real oidc-provider whose `accounts` may log in: the OIDC
 * settings are filled in, `env` adds to them (scopes, allow-lists, ...).
 */
export async function startAuthWithOidc(
  accounts: Record<string, AccountClaims>,
  env: Record<string, string>,
): Promise<AuthWithOidc> {
  const dir = await tempDir();
  const keysFile = (await newKeysFile(dir)).file;
  const listener = await listen();
  const idp = await startOidcProvider({ redirectUri: `${listener.url}callback/oidc`, accounts });
  const auth = await startAuth(listener, {
    AUTH_SESSION_KEYS_FILE: keysFile,
    AUTH_OIDC_ISSUER: idp.issuer,
    AUTH_OIDC_CLIENT_ID: idp.clientId,
    AUTH_OIDC_CLIENT_SECRET: idp.clientSecret,
    AUTH_OIDC_ALLOW_HTTP: "true",
    ...env,
  });
  return {
    dir,
    keysFile,
    idp,
    auth,
    async close() {
      await auth.close();
      await listener.close();
      await idp.close();
      await dir.remove();
    },
  };
}
