/**
 * The remote session verifier (lib/session.ts) fetches the auth service's keys on a new connection
 * each time: during a rotation, a connection kept alive from before would still reach the stopping
 * auth pod, which serves only the old keys.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { Socket } from "node:net";
import { test } from "node:test";
import {
  createRemoteSessionVerifier,
  createSessionSigner,
  generateSigningKey,
  parseSigningKeys,
  publicJwks,
} from "../session.ts";

test("a rotated key is fetched on a new connection, not from the pod an old connection still reaches", async (t) => {
  const oldKey = await generateSigningKey("old");
  const oldKeys = await parseSigningKeys({ keys: [oldKey] });
  const rotated = await parseSigningKeys({ keys: [await generateSigningKey("new"), oldKey] });
  // Stands in for a Service in front of two auth pods: connections opened before the rotation stay
  // with the old pod (old keys), later ones reach the new pod (both keys).
  const oldPodSockets = new WeakSet<Socket>();
  let afterRotation = false;
  let connections = 0;
  const server: Server = createServer((req, res) => {
    const oldPod = !afterRotation || oldPodSockets.has(req.socket);
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(publicJwks(oldPod ? oldKeys : rotated)));
  });
  server.on("connection", (socket: Socket) => {
    connections++;
    if (!afterRotation) oldPodSockets.add(socket);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as { port: number };

  const verifier = createRemoteSessionVerifier(new URL(`http://127.0.0.1:${port}/.well-known/jwks.json`), {
    cooldownMs: 0,
  });
  await verifier.refresh();
  const before = await createSessionSigner(oldKeys).sign("alice", 60);
  assert.equal((await verifier.verify(before))?.user, "alice", "a session signed before the rotation");

  afterRotation = true;
  const after = await createSessionSigner(rotated).sign("bob", 60);
  assert.equal(
    (await verifier.verify(after))?.user,
    "bob",
    "a session signed with the new key is accepted at once",
  );
  assert.equal(connections, 2, "one connection per fetch");
  assert.equal((await verifier.verify(before))?.user, "alice", "the old key still verifies");
});
