/**
 * The operator's heap is kept close to its live data. V8 sizes heaps for throughput: the old
 * generation grows to about 256 MiB before its first full collection, and later to several times
 * what is live. The operator's live heap is small (about 35 MiB at 1,000 Userlands, most of it
 * code), but creating a class's environments promotes much short-lived data (each
 * request waits a second or more on a busy API server), so its RSS rose to 370 MiB with 1,000
 * Userlands. It waits on the API server most of the time (70% idle then), so it trades a little
 * collection time for memory: V8's optimize-for-size mode.
 *
 * Not while its caches fill: with the mode on, V8 collects the old generation again and again
 * while the first lists' objects pile up, and a restart at 5,000 Userlands took 3.4× as long as
 * listing the same objects (docs/capacity.md). So the mode is set once the caches are synced. V8
 * reads the flag in its heap-growing heuristics at each collection, so setting it at run time
 * takes effect from the next one (docs/decisions/0002-operator.md, "Resource use").
 */
import { setFlagsFromString } from "node:v8";

let forSize = false;

/** Turns V8's optimize-for-size mode on for the rest of the process; true the first time only. */
export function optimizeHeapForSize(): boolean {
  if (forSize) return false;
  setFlagsFromString("--optimize-for-size");
  forSize = true;
  return true;
}
