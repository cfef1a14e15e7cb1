/** The browser tests' judge of wrong pages (issue 43 item 2): 4xx pages count, starting pages do not. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { errorPages } from "../../cluster/harness/browser.ts";

test("every 4xx and 5xx page is an error page but the starting page, and so is a browser error page", () => {
  const pages = [
    "200 Sign in",
    "503 Your VS Code environment is starting",
    "503 Starting up",
    "404 No environment",
    "404 Not found",
    "403 Not allowed",
    "502 VS Code is not answering",
    "504 VS Code is taking too long",
    "browser-error chrome-error://chromewebdata/",
    "200 code-server",
  ];
  assert.deepEqual(errorPages(pages), [
    "404 No environment",
    "404 Not found",
    "403 Not allowed",
    "502 VS Code is not answering",
    "504 VS Code is taking too long",
    "browser-error chrome-error://chromewebdata/",
  ]);
});
