/**
 * `npm start`: the whole platform on this machine (see dev/platform.ts). Prints the URL to open;
 * Ctrl-C stops everything (a second Ctrl-C exits at once).
 */
import { join } from "node:path";
import { startPlatform } from "../dev/platform.ts";
import { repoRoot } from "../cluster/controlPlane.ts";

const base = Number(process.env.USERLAND_PORT ?? 4180);
const platform = await startPlatform({
  dir: join(repoRoot, ".userland", "platform"),
  ports: { proxy: base, auth: base + 1, userManager: base + 2, identityProvider: base + 3 },
});

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) process.exit(130);
  stopping = true;
  console.log("\nstopping…");
  await platform.stop();
  process.exit(0);
}
process.on("SIGINT", () => void stop());
process.on("SIGTERM", () => void stop());

const kubectl = join(platform.controlPlane.binDir, "kubectl");
console.log(`
Userland is running on this machine (loopback only).

  Open            ${platform.url}
                  (log in with any name: the local identity provider is for trying it out, never for production)
  Auth service    ${platform.authUrl}
  User manager    ${platform.userManagerUrl}   (API: ${platform.userManagerUrl}/openapi.json)
  Kubernetes API  ${platform.controlPlane.server}
  Logs            ${platform.logsDir}

  kubectl:        KUBECONFIG=${platform.controlPlane.kubeconfig} ${kubectl} -n ${platform.namespace} get userlands

Press Ctrl-C to stop.`);
