/**
 * The operator's heap is kept close to its live data. V8 sizes heaps for throughput: the old
 * generation grows to about 256 MiB before its first full collection, and later to several times
 * what is live. The operator's live heap is small (about 35 MiB at 1,000 Userlands, most of it
 * code), but creating a class's environments promotes much short-lived data (each
 * request waits a second or more on a busy API server), so its RSS rose to 370 MiB with 1,000
 * Userlands. It waits on the API server most of the time (70% idle then), so it trades a little
 * collection time for memory: V8's optimize-for-size mode. V8 reads the flag in its heap-growing
 * heuristics, so setting it at start-up, before the caches fill, takes effect
 * (docs/decisions/0002-operator.md, "Resource use").
 *
 * Imported first by main.ts, for its effect only.
 */
import { setFlagsFromString } from "node:v8";

setFlagsFromString("--optimize-for-size");
