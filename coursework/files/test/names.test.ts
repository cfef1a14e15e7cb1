import assert from "node:assert/strict";
import { test } from "node:test";
import { checkEntryPath, NameError, pathProblem } from "../names.ts";

test("names.ts refuses every name that could leave an archive's folder or forge a manifest line", () => {
  const refused: Record<string, string> = {
    "../etc/passwd": "..",
    "notes/../../x": "..",
    "..": "..",
    "./a": '"."',
    "/etc/passwd": "absolute",
    "C:/Windows/x": "drive letter",
    "c:x": "drive letter",
    "a\\..\\..\\x": "backslash",
    "a\\b": "backslash",
    "a\u0000b": "control character",
    "a\nb": "control character",
    "a//b": "empty name",
    "a/": "empty name",
    "": "empty name",
    [`${"x".repeat(256)}`]: "longer than 255",
    [`${"abc/".repeat(1100)}x`]: "longer than 4096",
  };
  for (const [name, problem] of Object.entries(refused)) {
    assert.match(
      pathProblem(name) ?? "accepted",
      new RegExp(problem.replace(/[.\\]/g, "\\$&")),
      JSON.stringify(name),
    );
    assert.throws(() => checkEntryPath(name), NameError);
  }
  for (const name of ["a.txt", "week 1/notes.ipynb", "é/ü.py", "..hidden", "a..b", ".env", "x".repeat(255)]) {
    assert.equal(pathProblem(name), undefined, name);
    assert.equal(checkEntryPath(name), name);
  }
});
