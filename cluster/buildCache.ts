/**
 * The cache that outlives a checkout (USERLAND_CACHE, by default ~/.cache/userland): cluster/build.sh
 * keeps its Go tools there and cluster/images/*.sh their images; the test runner keeps each file's
 * last time there, so a fresh clone starts its longest files first too.
 */
import { homedir } from "node:os";
import { join } from "node:path";

export const buildCache = process.env.USERLAND_CACHE ?? join(homedir(), ".cache", "userland");
