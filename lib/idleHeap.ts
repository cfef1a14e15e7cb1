/**
 * Gives a burst's memory back once the process is idle (issue 32, docs/decisions/0003).
 *
 * V8 keeps its heap at the size a burst of work grew it to. Its memory reducer would shrink it, but
 * it waits for a low allocation rate that V8 measures at collections, and an idle process runs
 * none: in `npm run soak` the proxy stayed at its peak RSS for 40 s or more after the last client
 * left, and at 1.51x its start 60 s after (with bounded heap flags). So, when the event loop has
 * been nearly idle for a while and the heap has grown since the last compaction, this runs one
 * full collection of V8's "last resort" flavour, which also shrinks the young generation and
 * releases the heap's free pages to the system (about 0.1 s for a 40 MiB heap, paid only when
 * nothing is waiting). At most once per burst: the heap must grow again before the next one.
 */
import { performance, type EventLoopUtilization } from "node:perf_hooks";
import v8 from "node:v8";
import vm from "node:vm";

interface IdleHeapOptions {
  /** How often the event loop's utilization is read. Default 5 s. */
  checkMs?: number;
  /** Consecutive idle reads before compacting. Default 3 (15 s with the default checkMs). */
  quietChecks?: number;
  /** A read is idle when the loop was busy at most this share of the time. Default 0.02. */
  maxUtilization?: number;
  /** Compact only when V8's heap is this much larger than after the last compaction. Default 24 MiB. */
  growthBytes?: number;
  /** Told after each compaction (heap and RSS in bytes, the pause in ms). */
  onCompact?: (result: CompactionResult) => void;
}

interface CompactionResult {
  heapBefore: number;
  heapAfter: number;
  rssBefore: number;
  rssAfter: number;
  ms: number;
}

type GcFunction = (options: { type: "major"; execution: "sync"; flavor: "last-resort" }) => void;
let gcFunction: GcFunction | undefined;

/**
 * V8's gc() without --expose-gc on the command line: the flag set for a moment, the function taken
 * from a fresh context (the main context and everyone else's globals never see it).
 */
function fullGc(): GcFunction {
  if (!gcFunction) {
    v8.setFlagsFromString("--expose-gc");
    gcFunction = vm.runInNewContext("gc") as GcFunction;
    v8.setFlagsFromString("--no-expose-gc");
  }
  return gcFunction;
}

/** One compaction now: a full collection that shrinks the heap and returns its free pages. */
function compactHeap(): CompactionResult {
  const heapBefore = v8.getHeapStatistics().total_heap_size;
  const rssBefore = process.memoryUsage.rss();
  const started = performance.now();
  fullGc()({ type: "major", execution: "sync", flavor: "last-resort" });
  return {
    heapBefore,
    heapAfter: v8.getHeapStatistics().total_heap_size,
    rssBefore,
    rssAfter: process.memoryUsage.rss(),
    ms: performance.now() - started,
  };
}

/** Watches the event loop and compacts the heap after a burst; the timer never keeps the process up. */
export function compactHeapWhenIdle(options: IdleHeapOptions = {}): { stop: () => void } {
  const quietChecks = options.quietChecks ?? 3;
  const maxUtilization = options.maxUtilization ?? 0.02;
  const growthBytes = options.growthBytes ?? 24 * 1024 * 1024;
  let floor = v8.getHeapStatistics().total_heap_size;
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  let quiet = 0;
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const { utilization } = performance.eventLoopUtilization(now, last);
    last = now;
    quiet = utilization <= maxUtilization ? quiet + 1 : 0;
    if (quiet < quietChecks) return;
    const heap = v8.getHeapStatistics().total_heap_size;
    // The heap shrank on its own (V8's memory reducer): follow it down, nothing to do.
    if (heap < floor) floor = heap;
    if (heap - floor < growthBytes) return;
    const result = compactHeap();
    floor = result.heapAfter;
    quiet = 0;
    last = performance.eventLoopUtilization();
    options.onCompact?.(result);
  }, options.checkMs ?? 5000);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
