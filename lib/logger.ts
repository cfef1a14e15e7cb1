/** Structured JSON logs for every component (pino), one logger per process with the component name. */
import { pino, type Logger } from "pino";

export type { Logger };

export function createLogger(component: string, level = process.env.LOG_LEVEL ?? "info"): Logger {
  return pino({
    name: component,
    level,
    base: { component },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  });
}
