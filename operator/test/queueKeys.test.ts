import assert from "node:assert/strict";
import { test } from "node:test";
import { KIND_CODES, parseQueueKey, queueKey, type QueueKind } from "../queueKeys.ts";

test("every kind's key reads back as that kind, namespace and name", () => {
  for (const kind of Object.keys(KIND_CODES) as QueueKind[])
    assert.deepEqual(parseQueueKey(queueKey(kind, "class-a", "x")), {
      kind,
      namespace: "class-a",
      name: "x",
    });
  assert.equal(new Set(Object.values(KIND_CODES)).size, Object.keys(KIND_CODES).length, "one code per kind");
});

test("a key of no kind is no key (it was synced as a Userland)", () => {
  for (const key of ["X/ns/a", "ns/a", "U/ns", "U/ns/", "U/ns/a/b", ""])
    assert.equal(parseQueueKey(key), undefined, key);
});
