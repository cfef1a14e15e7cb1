/**
 * The harness's relays into the real node (cluster/node/relay.ts), in a network namespace of their
 * own: a target that refuses the relay's first SYN the way the node's kube-proxy does for a Service
 * it has not programmed yet (nftables `reject`: ICMP port unreachable), and is there a second later.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { NodeNamespace } from "../../cluster/node/namespace.ts";
import { Relays } from "../../cluster/node/relay.ts";
import { realNodeUnsupported } from "../../cluster/node/support.ts";
import { ProcessGroup, waitFor } from "../../cluster/processes.ts";

/** What comes back on `socket` after `line` is sent: its echo, or "closed"; "nothing" after 5 s. */
function ask(socket: Socket, line: string): Promise<string> {
  return new Promise((resolve) => {
    const done = (what: string) => {
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("close", onClose);
      resolve(what);
    };
    const onData = (data: Buffer) => done(data.toString().trim());
    const onClose = () => done("closed");
    const timer = setTimeout(() => done("nothing"), 5_000);
    socket.on("data", onData);
    socket.once("close", onClose);
    socket.write(`${line}\n`);
  });
}

async function open(port: number): Promise<Socket> {
  const socket = connect(port, "127.0.0.1");
  socket.on("error", () => undefined);
  await new Promise((resolve) => socket.once("connect", resolve));
  return socket;
}

test("a relay's refused connection is closed, not left to answer once and then hang", async (t) => {
  const unsupported = realNodeUnsupported();
  assert.equal(unsupported, undefined, `the relays need the real node's namespaces: ${unsupported}`);
  const dir = mkdtempSync(join(tmpdir(), "userland-relay-test-"));
  const ns = new NodeNamespace(new ProcessGroup(dir, () => undefined));
  const relays = new Relays(join(dir, "relay"), ns);
  t.after(async () => {
    await relays.close();
    await ns.destroy();
    rmSync(dir, { recursive: true, force: true });
  });
  await ns.create();
  await ns.run("sh", [
    "-c",
    [
      "set -e",
      "ip link set lo up",
      "nft add table ip refuse",
      "nft add chain ip refuse out '{ type filter hook output priority filter; }'",
      // The first SYN only (about 60 bytes): the second one a second later gets through.
      "nft add rule ip refuse out tcp dport 8080 tcp flags syn quota until 70 bytes reject",
    ].join("\n"),
  ]);
  await ns.startDaemon("echo", "socat", ["TCP-LISTEN:8080,bind=127.0.0.1,fork,reuseaddr", "EXEC:cat"]);
  await waitFor(
    "the echo server in the namespace",
    async () => (await ns.run("ss", ["-Hltn", "sport", "= :8080"])).includes("8080"),
    10_000,
  );
  const port = await relays.expose("127.0.0.1:8080");

  // Refused: the client's connection closes before any answer, as a pod's connect is refused.
  // socat's blocking connect instead succeeded a second later on the retried SYN, answered "one"
  // and never relayed "two" (the ICMP error left on the socket made select() call it readable).
  const refused = await open(port);
  const started = Date.now();
  assert.equal(await ask(refused, "one"), "closed");
  assert.ok(Date.now() - started < 1_000, `closed after ${Date.now() - started} ms`);

  // The target answers now: every line on one connection comes back.
  const answering = await open(port);
  for (const line of ["one", "two", "three"]) assert.equal(await ask(answering, line), line);
  answering.destroy();
});
