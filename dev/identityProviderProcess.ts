/**
 * The local OpenID provider (identityProvider.ts) in a process of its own, as a real provider is
 * never in the platform's processes. The benchmarks use it: inside the benchmark's process, beside
 * a thousand simulated students, the provider shared their event loop and answered after the auth
 * service's 10 s timeout (bench:rush at 1,000), so the benchmark measured itself; apart, it gets
 * its own share of the CPU, and its CPU time is counted apart.
 *
 * The parent binds the socket (cluster/ports.ts) and passes it down, so the issuer's URL is known
 * before the child starts. Run by startDevIdentityProviderProcess, this file serves on that socket.
 */
import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { diesWithParent, waitFor } from "../cluster/processes.ts";
import { listeningSocket, portOf, socketsFor } from "../cluster/ports.ts";
import { DEV_CLIENT, startDevIdentityProvider, type DevIdentityProvider } from "./identityProvider.ts";

/** The passed socket's name (lib/listen.ts) and the redirect URIs' variable (a JSON array). */
const SOCKET = "IDENTITY_PROVIDER_PORT";
const REDIRECT_URIS = "IDENTITY_PROVIDER_REDIRECT_URIS";

export async function startDevIdentityProviderProcess(opts: {
  port: number;
  redirectUris: string[];
  /** Where its output goes. */
  logFile: string;
  /** How long it may take to answer its discovery document (default 30 s). */
  startTimeoutMs?: number;
}): Promise<DevIdentityProvider> {
  const socket = await listeningSocket(opts.port);
  const issuer = `http://127.0.0.1:${portOf(socket)}`;
  const passed = socketsFor({ [SOCKET]: socket });
  const logFd = openSync(opts.logFile, "w");
  const child = spawn(...diesWithParent(process.execPath, [fileURLToPath(import.meta.url)], "SIGTERM"), {
    env: { ...process.env, [REDIRECT_URIS]: JSON.stringify(opts.redirectUris), ...passed.env },
    stdio: ["ignore", logFd, logFd, ...passed.fds],
  });
  closeSync(logFd);
  passed.close();
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  const close = async () => {
    if (running()) child.kill("SIGTERM");
    await exited;
  };

  // Connections queue on the bound socket until the child serves it: wait for its first answer,
  // so a provider that cannot start fails here, naming its log, not as the auth service's timeout.
  await waitFor(
    "the local identity provider",
    async () =>
      (await fetch(`${issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(2000) })).ok,
    opts.startTimeoutMs ?? 30_000,
    {
      alive: running,
      logs: opts.logFile,
      intervalMs: 100,
    },
  ).catch(async (error: unknown) => {
    await close();
    throw error;
  });
  return { issuer, ...DEV_CLIENT, close };
}

if (import.meta.main) {
  const redirectUris = JSON.parse(process.env[REDIRECT_URIS] ?? "[]") as string[];
  const idp = await startDevIdentityProvider({ port: 0, listenAs: SOCKET, redirectUris });
  console.log(JSON.stringify({ msg: "local identity provider serving", issuer: idp.issuer, redirectUris }));
  process.once("SIGTERM", () => void idp.close().then(() => process.exit(0)));
}
