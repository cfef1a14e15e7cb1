/**
 * Where the browser tests save the pictures the docs show. In every `npm test` they go under
 * artifacts/screenshots (ignored by git), so a run leaves the working tree as it found it; only
 * `npm run screenshots` (USERLAND_SCREENSHOTS=docs) refreshes docs/screenshots with them.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../../cluster/repoRoot.ts";

export function screenshotsDir(): string {
  const dir =
    process.env.USERLAND_SCREENSHOTS === "docs"
      ? join(repoRoot, "docs", "screenshots")
      : join(repoRoot, "artifacts", "screenshots");
  mkdirSync(dir, { recursive: true });
  return dir;
}
