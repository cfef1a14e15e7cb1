/**
 * `docker build` and `docker push` as deploy/README.md uses them, for replaying the guide on this
 * machine, which has no Docker and no registry: `build -t NAME .` builds the repository's Dockerfile
 * with buildah (cluster/images/platform.sh); `push NAME` puts that image into the real node's
 * containerd under NAME, which is where a push followed by the kubelet's pull would have put it.
 *
 *   USERLAND_CTR=<ctr> USERLAND_CONTAINERD=<socket> node test/support/dockerStandIn.ts build -t NAME .
 */
import { execFileSync } from "node:child_process";
import { buildPlatformImage, importImage } from "../../cluster/node/images.ts";

const [command, ...args] = process.argv.slice(2);
const ctr = process.env.USERLAND_CTR;
const socket = process.env.USERLAND_CONTAINERD;
if (!ctr || !socket)
  throw new Error("set USERLAND_CTR (the ctr binary) and USERLAND_CONTAINERD (its socket)");

const image = await buildPlatformImage();
if (command === "build") {
  const tag = args[args.indexOf("-t") + 1];
  if (!args.includes("-t") || !tag || args.at(-1) !== ".") {
    throw new Error(`docker stand-in: expected "build -t NAME .", got "build ${args.join(" ")}"`);
  }
  process.stdout.write(`built ${image.ref} from ./Dockerfile for ${tag}\n`);
} else if (command === "push" && args.length === 1 && args[0]) {
  await importImage(ctr, socket, image);
  execFileSync(ctr, [
    "--address",
    socket,
    "--namespace",
    "k8s.io",
    "images",
    "tag",
    "--force",
    image.ref,
    args[0],
  ]);
  process.stdout.write(`${args[0]}: in the node's containerd as ${image.ref}\n`);
} else {
  throw new Error(
    `docker stand-in: only "build -t NAME ." and "push NAME", got "${process.argv.slice(2).join(" ")}"`,
  );
}
