/**
 * `npm start`: the whole platform on this machine. With root and the kernel features the real
 * node needs, students get real IDEs (dev/realPlatform.ts: the Helm chart on a real node); else,
 * or with USERLAND_REAL_NODE=off, it says in one line why and runs the kwok demo
 * (dev/platform.ts), whose environments stand in for IDEs. Prints the URLs to open, first the
 * students' home page (/_userland/home on the proxy's base port: the base port serves a Template,
 * so the home is at its fixed path there); Ctrl-C stops everything (a second Ctrl-C exits at once).
 */
import { join } from "node:path";
import { repoRoot } from "../cluster/repoRoot.ts";
import { listeningSocket } from "../cluster/ports.ts";
import { CONSOLE_TEACHER, startPlatform } from "../dev/platform.ts";
import { startRealPlatform } from "../dev/realPlatform.ts";

const base = Number(process.env.USERLAND_PORT ?? 4180);
const log = (line: string) => console.error(line);

/** What listens at each port from the base (USERLAND_PORT) on. */
const PORT_USES = [
  "the proxy",
  "the auth service",
  "the user-manager",
  "the login provider",
  "Jupyter",
  "phpMyAdmin",
];

/** One line, no stack trace, then exit: a setting or a port is the user's to change. */
function fail(message: string): never {
  console.error(`npm start: ${message}`);
  process.exit(1);
}

function portTaken(port: number): never {
  const use = PORT_USES[port - base];
  fail(
    `127.0.0.1:${port}${use ? ` (${use})` : ""} is already in use: stop what listens there, or set ` +
      `USERLAND_PORT to another base port (now ${base}; it uses ${base}-${base + PORT_USES.length - 1}).`,
  );
}

function isPortTaken(error: unknown): error is { port: number } {
  const e = error as { code?: string; port?: unknown };
  return e?.code === "EADDRINUSE" && typeof e.port === "number";
}

if (!Number.isInteger(base) || base < 1024 || base > 65_535 - PORT_USES.length)
  fail(
    `USERLAND_PORT must be a port number from 1024 to ${65_535 - PORT_USES.length}, not "${process.env.USERLAND_PORT}".`,
  );
// Before minutes of start-up: every port must be free now (they are bound for good later).
for (let port = base; port < base + PORT_USES.length; port++) {
  const socket = await listeningSocket(port).catch((error: unknown) => {
    if (isPortTaken(error)) portTaken(port);
    throw error;
  });
  await new Promise((resolve) => socket.close(resolve));
}
// Taken meanwhile: the same line, from wherever the platform binds it.
process.on("uncaughtException", (error) => {
  if (isPortTaken(error)) portTaken(error.port);
  console.error(error);
  process.exit(1);
});

/** Real IDEs, or why not (one line). */
async function tryRealPlatform() {
  if (process.env.USERLAND_REAL_NODE === "off") return "USERLAND_REAL_NODE=off";
  if (process.getuid?.() !== 0) return "the real node runs containerd and runc, which need root";
  try {
    return await startRealPlatform({ dir: join(repoRoot, ".userland", "platform-real"), base, log });
  } catch (error) {
    if (isPortTaken(error)) portTaken(error.port);
    return `the real node could not start here: ${String((error as Error).message).split("\n")[0]}`;
  }
}

const real = await tryRealPlatform();
let stopPlatform: () => Promise<void>;
let banner: string;
if (typeof real === "string") {
  console.log(`Real IDEs are not available (${real}); starting the demo with stand-in environments.`);
  const platform = await startPlatform({
    dir: join(repoRoot, ".userland", "platform"),
    ports: { proxy: base, auth: base + 1, userManager: base + 2, identityProvider: base + 3 },
  }).catch((error: unknown) => {
    if (isPortTaken(error)) portTaken(error.port);
    throw error;
  });
  stopPlatform = () => platform.stop();
  const kubectl = join(platform.controlPlane.binDir, "kubectl");
  banner = `
Userland is running on this machine (loopback only), with demo environments standing in for IDEs.

  Open            ${platform.url}_userland/home
                  your home page: your environments, to open, start and stop (log in with any name:
                  the local identity provider is for trying it out, never for production)
  Demo            ${platform.url}   (the demo environment itself)
  Auth service    ${platform.authUrl}
  User manager    ${platform.userManagerUrl}   (API: ${platform.userManagerUrl}/openapi.json)
  Teachers        ${platform.consoleUrl}   (sign in as "${CONSOLE_TEACHER}")
  Kubernetes API  ${platform.controlPlane.server}
  Logs            ${platform.logsDir}

  kubectl:        KUBECONFIG=${platform.controlPlane.kubeconfig} ${kubectl} -n ${platform.namespace} get userlands`;
} else {
  stopPlatform = () => real.stop();
  const assigned = Object.entries(real.assigned)
    .map(
      ([user, template]) => `  ${template.padEnd(15)} ${real.templates[template]}   (sign in as "${user}")`,
    )
    .join("\n");
  banner = `
Userland is running on this machine (loopback only), with real IDEs on a real node.

  Open            ${real.url}_userland/home
                  your home page: your environments, to open, start and stop (the local identity
                  provider accepts any name: for trying it out, never for production)
  VS Code         ${real.url}   (every name you sign in with gets one)
${assigned}
  Auth service    ${real.authUrl}
  User manager    ${real.userManagerUrl}   (API: ${real.userManagerUrl}/openapi.json)
  Teachers        ${real.consoleUrl}   (sign in as "${CONSOLE_TEACHER}")

  kubectl:        KUBECONFIG=${real.kubeconfig} ${join(real.binDir, "kubectl")} -n ${real.namespace} get userlands,pods`;
}

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) process.exit(130);
  stopping = true;
  console.log("\nstopping…");
  await stopPlatform();
  process.exit(0);
}
process.on("SIGINT", () => void stop());
process.on("SIGTERM", () => void stop());

console.log(`${banner}

Press Ctrl-C to stop.`);
