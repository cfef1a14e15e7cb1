/**
 * A WebSocket slot comes back when the client closes, even when the environment never closes its
 * side (issue 29 item 6): before, a student who closed all their WebSockets to a half-open upstream
 * got 429 until the idle timeout (7+ minutes in the report). Real control plane and sessions; the
 * upstream is a raw loopback socket server that answers the handshake and ignores the FIN.
 */
import assert from "node:assert/strict";
import { createConnection, createServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { eventually, testNamespace } from "../../../test/support/cluster.ts";
import { installCrds } from "../../../test/support/operator.ts";
import {
  createTemplate,
  createUserland,
  markReady,
  simpleTemplateSpec,
} from "../../../test/support/resources.ts";
import { startProxy, testKeys } from "./support.ts";

const HOST = "code.example.test";

test("a WebSocket slot is freed when the client closes, though the environment stays half-open", async (t) => {
  const ns = await testNamespace(t, "ws-half-open");
  await installCrds();
  await createTemplate(ns, "code", simpleTemplateSpec("registry.invalid/code:1"));
  await createUserland(ns, "code-alice", "alice", "code");
  await markReady(ns, "code-alice", { name: "env-alice", port: 8080 });

  // Answers every handshake with 101, then neither reads on nor ever ends its side.
  const upstreamSockets = new Set<Socket>();
  const upstream = createServer({ allowHalfOpen: true }, (socket) => {
    upstreamSockets.add(socket);
    socket.on("error", () => socket.destroy());
    socket.once("data", () =>
      socket.write(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n",
      ),
    );
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    for (const s of upstreamSockets) s.destroy();
    return new Promise<void>((resolve) => upstream.close(() => resolve()));
  });

  const keys = await testKeys(t);
  const proxy = await startProxy(t, ns, keys, { PROXY_MAX_WEBSOCKETS_PER_USER: "1" });
  proxy.resolver.set(ns, "env-alice", `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`);
  const cookie = await keys.cookie("alice");

  /** A raw handshake: the status line's code, and the client's socket (still open). */
  const handshake = () =>
    new Promise<{ status: number; socket: Socket }>((resolve, reject) => {
      const socket = createConnection({ host: "127.0.0.1", port: proxy.port });
      t.after(() => socket.destroy());
      socket.once("error", reject);
      socket.once("data", (chunk: Buffer) =>
        resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(chunk.toString("latin1"))?.[1]), socket }),
      );
      socket.write(
        `GET /socket HTTP/1.1\r\nHost: ${HOST}\r\nCookie: ${cookie}\r\nOrigin: http://${HOST}\r\n` +
          "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
      );
    });

  const first = await handshake();
  assert.equal(first.status, 101);
  assert.equal((await handshake()).status, 429, "one WebSocket per student here");
  // The student closes (FIN); the environment never closes its side.
  first.socket.end();
  await eventually(
    "the slot to come back",
    async () => {
      const again = await handshake();
      again.socket.destroy();
      return again.status === 101;
    },
    5_000,
    200,
  );
  await eventually("no WebSocket held open", () => proxy.app.proxy.inFlight().websockets === 0, 5_000);
});
