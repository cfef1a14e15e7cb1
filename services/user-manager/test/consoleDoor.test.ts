/**
 * The console authorizes before it works (issue 29 item 3), against the real control plane with
 * real RBAC: a signed-in student with no rights is refused before a body is read, a Userland is
 * listed or an owner named, the refusal is remembered briefly, a teacher's bulk action costs one
 * access review rather than one per student, forms are small unless they are rosters, and one
 * caller cannot hold more than a few console requests at once.
 */
import assert from "node:assert/strict";
import { connect } from "node:net";
import { test } from "node:test";
import { SessionRecordAnnotations } from "../../../api/sessions.ts";
import { eventually } from "../../../test/support/cluster.ts";
import { getSessionRecord } from "../../../test/support/resources.ts";
import { CONSOLE_ORIGIN, startConsole } from "./consoleSupport.ts";
import { admin } from "./support.ts";
import type { Metrics } from "../metrics.ts";

/** Every access review the service has sent to Kubernetes so far. */
async function accessReviews(metrics: Metrics): Promise<number> {
  return (await metrics.accessReviews.get()).values.reduce((sum, v) => sum + v.value, 0);
}

/** How long a raw client waits for an answer before it counts the service as not answering. */
const CLIENT_GIVES_UP_MS = 8000;

/**
 * Sends `head` and the first bytes of a body that never ends, and resolves with everything the
 * service sent once it has sent a status line (or with "" after CLIENT_GIVES_UP_MS).
 */
function headWithoutBody(
  base: string,
  head: string,
): { answer: Promise<string>; close: () => void; closed: Promise<void> } {
  const url = new URL(base);
  const socket = connect(Number(url.port), url.hostname);
  let text = "";
  let closedResolve: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (closedResolve = resolve));
  socket.on("close", () => closedResolve());
  socket.on("error", () => undefined);
  const answer = new Promise<string>((resolve) => {
    const giveUp = setTimeout(() => resolve(text), CLIENT_GIVES_UP_MS);
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1");
      if (/\r\n\r\n/.test(text)) {
        clearTimeout(giveUp);
        resolve(text);
      }
    });
    socket.on("close", () => {
      clearTimeout(giveUp);
      resolve(text);
    });
  });
  socket.write(head);
  socket.write("template=code&action=start&name=");
  return { answer, close: () => socket.destroy(), closed };
}

const statusOf = (raw: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);

test("a signed-in student with no rights: refused before a body is read, anything listed or anyone named", async (t) => {
  const h = await startConsole(t);
  await admin.createUserland(h.ns, "ada-code", "ada@uni.example", "code");
  await admin.createUserland(h.ns, "bob-code", "bob@uni.example", "code");
  const cookie = await h.cookie("mallory@uni.example", ["students"]);
  const before = await accessReviews(h.metrics);

  // The delete confirmation named each environment's owner to anyone who asked: an oracle of who
  // takes which class (Userland names are computable from identities).
  await t.test("the delete confirmation names no owner", async () => {
    const oracle = await h.post("/console/class/actions", cookie, {
      template: "code",
      action: "delete",
      name: ["ada-code", "bob-code"],
    });
    const oracleText = await oracle.text();
    assert.doesNotMatch(oracleText, /ada@uni\.example|bob@uni\.example/, "no owner is named");
    assert.equal(oracle.status, 403, oracleText.slice(0, 300));
    assert.match(oracleText, /userland:mallory@uni\.example may not list userlands/);
  });

  // The index and a class page: each cost N+2 reviews and a full LIST, every time.
  await t.test("seven refused pages cost the door's 3 reviews (refusals remembered)", async () => {
    for (let i = 0; i < 3; i++) {
      assert.equal((await h.page("/console/", cookie)).status, 403);
      assert.equal((await h.page("/console/class?template=code", cookie)).status, 403);
    }
    const spent = (await accessReviews(h.metrics)) - before;
    assert.ok(spent <= 3, `${spent} access reviews for 7 refused requests (the door's 3, then remembered)`);
  });

  // A 6 MB form announced and never finished: answered 403 at once, the body never read.
  await t.test("a 6 MB form is refused before its body is read", async () => {
    const big = headWithoutBody(
      h.base,
      `POST /console/roster/preview HTTP/1.1\r\nHost: x\r\nCookie: ${cookie}\r\nOrigin: ${CONSOLE_ORIGIN}\r\n` +
        `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${6 * 1024 * 1024}\r\n\r\n`,
    );
    const raw = await big.answer;
    // Closed here: a service still waiting for the body would hold up its own shutdown.
    big.close();
    assert.equal(statusOf(raw), 403, raw.slice(0, 300) || "no answer before the body");
    assert.match(raw, /\r\nconnection: close\r\n/i, "the unread body is not waited for");
  });

  for (const name of ["ada-code", "bob-code"])
    assert.equal((await admin.getUserland(h.ns, name)).metadata.deletionTimestamp, undefined);
});

test("a teacher: a bulk Stop costs one review, forms are small unless rosters, a fifth request in flight waits its turn", async (t) => {
  const h = await startConsole(t);
  const names = Array.from({ length: 40 }, (_, i) => `s${i}-code`);
  await Promise.all(names.map((n, i) => admin.createUserland(h.ns, n, `s${i}@uni.example`, "code")));
  await h.appoint({ user: "alice@uni.example" });
  const cookie = await h.cookie("alice@uni.example");
  await eventually(
    "the console to let the teacher in",
    async () => (await h.page("/console/", cookie)).status === 200,
  );

  // A class of 40: one review of the namespace-wide right, not one per student.
  await t.test("a bulk Stop of 40 costs one review, not one per student", async () => {
    const before = await accessReviews(h.metrics);
    const start = await h.post("/console/class/actions", cookie, {
      template: "code",
      action: "stop",
      name: names,
    });
    assert.equal(start.status, 303, (await start.text()).slice(0, 300));
    const spent = (await accessReviews(h.metrics)) - before;
    for (const n of names.slice(0, 3)) assert.equal((await admin.getUserland(h.ns, n)).spec.enabled, false);
    assert.ok(spent <= 2, `${spent} access reviews to stop 40 environments`);
  });

  // A stolen laptop: the teacher signs a student out everywhere (issue 29 item 5).
  await t.test("Sign out everywhere marks the student's session record", async () => {
    const signOut = await h.post("/console/class/actions", cookie, {
      template: "code",
      row: "end-sessions:s1-code",
    });
    assert.equal(signOut.status, 303);
    const marked = (await getSessionRecord(h.ns, "s1@uni.example"))?.metadata.annotations ?? {};
    assert.match(
      marked[SessionRecordAnnotations.sessionsValidAfter] ?? "",
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
    );
    assert.equal(
      (await admin.getUserland(h.ns, "s1-code")).metadata.annotations?.[
        SessionRecordAnnotations.sessionsValidAfter
      ],
      undefined,
      "nothing on the Userland, which a teacher may delete",
    );
  });

  // A form far larger than any bulk action: 413, nothing done.
  await t.test("a 512 KiB form that is not a roster: 413, nothing done", async () => {
    const padded = await h.post("/console/class/actions", cookie, {
      template: "code",
      action: "start",
      name: "s0-code",
      pad: "x".repeat(512 * 1024),
    });
    assert.equal(padded.status, 413);
    assert.equal((await admin.getUserland(h.ns, "s0-code")).spec.enabled, false);
  });

  // Four requests held open (their bodies never finish): a fifth is refused with 429 and
  // Retry-After; another teacher is not affected; closing them frees the slots.
  const head =
    `POST /console/class/actions HTTP/1.1\r\nHost: x\r\nCookie: ${cookie}\r\nOrigin: ${CONSOLE_ORIGIN}\r\n` +
    `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n`;
  await t.test("a fifth request in flight: 429; another teacher served; slots come back", async () => {
    const held = Array.from({ length: 4 }, () => headWithoutBody(h.base, head));
    try {
      // All four counted before the fifth is sent: on a loaded machine a fifth sent at once can
      // overtake the fourth, which is then the one refused.
      await eventually(
        "the four held requests to be in flight",
        async () => (await h.metrics.consoleInFlight.get()).values[0]?.value === 4,
      );
      const fifth = await eventually(
        "a fifth request to be refused",
        async () => {
          const r = await fetch(`${h.base}/console/`, { headers: { cookie }, redirect: "manual" });
          await r.text();
          return r.status === 429 ? r : undefined;
        },
        10_000,
      );
      assert.equal(fifth.headers.get("retry-after"), "5");
      await h.appoint({ user: "bea@uni.example" });
      const bea = await h.cookie("bea@uni.example");
      assert.equal((await h.page("/console/", bea)).status, 200, "another teacher is served");
    } finally {
      for (const c of held) c.close();
    }
    await Promise.all(held.map((c) => c.closed));
    await eventually("the slots to be freed", async () => (await h.page("/console/", cookie)).status === 200);
  });
});
