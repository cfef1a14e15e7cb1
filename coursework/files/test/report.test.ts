import assert from "node:assert/strict";
import { test } from "node:test";
import { fitJson } from "../report.ts";

test("fitJson keeps a result within a termination message and says how much each list lost", () => {
  const files = Array.from({ length: 500 }, (_, i) => ({
    path: `folder/file-${i}.txt`,
    bytes: i,
    sha256: "a".repeat(64),
  }));
  const skipped = Array.from({ length: 20 }, (_, i) => ({ path: `link-${i}`, reason: "a symbolic link" }));
  const text = fitJson({ files, bytes: 1234, sha256: "b".repeat(64), skipped });
  assert.ok(Buffer.byteLength(text) <= 4096, `${Buffer.byteLength(text)} bytes`);
  const fitted = JSON.parse(text) as {
    files: unknown[];
    skipped: unknown[];
    omitted: Record<string, number>;
    bytes: number;
  };
  assert.equal(fitted.bytes, 1234);
  assert.equal(fitted.files.length + fitted.omitted.files!, 500);
  assert.equal(fitted.skipped.length + (fitted.omitted.skipped ?? 0), 20);
  assert.ok(fitted.files.length > 0, "cuts only what it must");
  const small = { files: files.slice(0, 2), bytes: 1 };
  assert.equal(fitJson(small), JSON.stringify(small));
});
