/** Structured JSON logs for every component (pino), one logger per process with the component name. */
import { pino, type DestinationStream, type Logger, type LoggerOptions } from "pino";

export type { Logger };

function options(component: string, level: string): LoggerOptions {
  return {
    name: component,
    level,
    base: { component },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
}

export function createLogger(component: string, level = process.env.LOG_LEVEL ?? "info"): Logger {
  return pino(options(component, level));
}

let batchedStdout: (DestinationStream & { flush(): void }) | undefined;

/**
 * A logger like `log` (same component, level and format) for one line per request: its lines reach
 * stdout in batches of 8 KiB or more, at least once a second and at exit, as nginx's
 * `access_log … buffer=8k flush=1s`. A write(2) per line cost the proxy 15% of its CPU per request
 * (docs/decisions/0003-proxy-library.md); a crash loses at most the last second of such lines.
 */
export function batchedLike(log: Logger): Logger {
  if (!batchedStdout) {
    const destination = pino.destination({ dest: 1, sync: false, minLength: 8 * 1024 });
    setInterval(() => destination.flush(), 1000).unref();
    batchedStdout = destination;
  }
  const component = (log.bindings() as { component?: string }).component ?? "userland";
  return pino(options(component, log.level), batchedStdout);
}
