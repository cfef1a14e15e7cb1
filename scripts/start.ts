/**
 * `npm start`: the platform on this machine. Starts a real control plane on loopback and prints how
 * to reach it; stops everything on Ctrl-C.
 */
import { join } from "node:path";
import { ControlPlane, repoRoot } from "../test/cluster/controlPlane.ts";

const controlPlane = new ControlPlane({ dir: join(repoRoot, ".userland", "dev-cluster") });
let stopping = false;
async function stop(): Promise<void> {
  if (stopping) process.exit(130); // a second Ctrl-C exits at once
  stopping = true;
  console.log("\nstopping…");
  await controlPlane.stop({ keepFiles: true });
  process.exit(0);
}
process.on("SIGINT", () => void stop());
process.on("SIGTERM", () => void stop());

const info = await controlPlane.start();
console.log(`
Userland is running on loopback.

  Kubernetes API   ${info.server}
  kubeconfig       ${info.kubeconfig}
  logs             ${join(info.dir, "logs")}

Try:  KUBECONFIG=${info.kubeconfig} ${join(controlPlane.binDir, "kubectl")} get nodes

Press Ctrl-C to stop.`);
