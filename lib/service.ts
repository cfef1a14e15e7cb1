/**
 * What every service's main.ts does around its own start-up: `--help`, configuration errors as a
 * message and exit code 2 (a crash-looping pod then says what to set), and graceful shutdown on
 * SIGTERM/SIGINT where a second signal exits at once.
 */
import { ConfigError, describeSettings, type Settings } from "./config.ts";
import type { Logger } from "./logger.ts";

/** Prints the summary and every setting, then exits, when the command line asks for help. */
export function helpRequested(summary: string, settings: Settings, extra: [string, string][] = []): void {
  if (!process.argv.includes("--help") && !process.argv.includes("-h")) return;
  const all: [string, string][] = [
    ["LOG_LEVEL", 'Log level: debug, info, warn, error (default: "info")'],
    ...extra,
  ];
  const lines = all.map(([env, description]) => `  ${env.padEnd(34)} ${description}\n`);
  process.stdout.write(
    `${summary}\n\nSettings (environment variables):\n${describeSettings(settings)}\n${lines.join("")}`,
  );
  process.exit(0);
}

export const KUBECONFIG_HELP: [string, string] = [
  "KUBECONFIG",
  "kubeconfig file (default: the in-cluster ServiceAccount)",
];

export interface RunningService {
  /** Stops accepting work and finishes what is in flight. */
  stop: () => Promise<void>;
  /** Logged when the first signal arrives, e.g. "shutting down: draining connections". */
  stopping?: string;
  /** Extra fields for that log line. */
  stoppingFields?: Record<string, unknown>;
}

/** Starts a service and owns its process lifetime from then on. */
export async function runService(
  name: string,
  log: Logger,
  start: () => Promise<RunningService>,
): Promise<void> {
  try {
    const service = await start();
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        log.warn({ signal }, "second signal: exiting now");
        process.exit(1);
      }
      stopping = true;
      log.info({ signal, ...service.stoppingFields }, service.stopping ?? "shutting down");
      service.stop().then(
        () => {
          log.info("stopped");
          process.exit(0);
        },
        (error: unknown) => {
          log.error({ err: error }, "shutdown failed");
          process.exit(1);
        },
      );
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n\nRun with --help to list every setting.\n`);
      process.exit(2);
    }
    log.fatal({ err: error }, `${name} failed to start`);
    process.exit(1);
  }
}
