/**
 * The one entry point helper of the operator, auth, proxy and user-manager: `--help`/`-h` lists
 * every setting, configuration errors become a message and exit code 2 (a crash-looping pod then
 * says what to set), and SIGTERM/SIGINT stop the component gracefully where a second signal exits
 * at once.
 */
import { ConfigError, describeSettings, helpLine, type Settings } from "./config.ts";
import { compactHeapWhenIdle } from "./idleHeap.ts";
import { createLogger, type Logger } from "./logger.ts";

export interface RunningService {
  /** Stops accepting work and finishes what is in flight. */
  stop: () => Promise<void>;
  /** Logged when the first signal arrives, e.g. "shutting down: draining connections". */
  stopping?: string;
  /** Extra fields for that log line. */
  stoppingFields?: Record<string, unknown>;
}

export interface Component<C> {
  /** The logger's component name, e.g. "proxy". */
  name: string;
  /** What the component does: the first paragraph of `--help`. */
  summary: string;
  /** Its settings table, listed by `--help`. */
  settings: Settings;
  /** Whether it talks to Kubernetes, so `--help` lists KUBECONFIG. */
  kubernetes: boolean;
  /** Reads and cross-checks the settings; throws ConfigError listing every problem. */
  load: () => C;
  /**
   * Give the heap a burst of requests grew back once the process is idle (lib/idleHeap.ts): for
   * the request-serving components, whose load comes in lectures and sign-in rushes.
   */
  compactHeapWhenIdle?: boolean;
  /** Starts serving; a ConfigError thrown here (e.g. an unreadable key file) exits 2 too. */
  start: (config: C, log: Logger) => Promise<RunningService>;
}

/** Variables every component reads outside its settings table. */
const LOG_LEVEL_HELP = helpLine("LOG_LEVEL", 'Log level: debug, info, warn, error (default: "info")');
const LISTEN_FDS_HELP = helpLine(
  "LISTEN_FDS, LISTEN_FDNAMES",
  "Sockets passed by the parent (systemd socket activation); one named like a *_PORT setting is served on instead of that host and port",
);
const KUBECONFIG_HELP = helpLine("KUBECONFIG", "kubeconfig file (default: the in-cluster ServiceAccount)");

/** The `--help` text: the summary and every variable the component reads. */
function helpText(component: Omit<Component<unknown>, "load" | "start">): string {
  const lines = [describeSettings(component.settings), LOG_LEVEL_HELP, LISTEN_FDS_HELP];
  if (component.kubernetes) lines.push(KUBECONFIG_HELP);
  return `${component.summary}\n\nSettings (environment variables):\n${lines.join("\n")}\n`;
}

/** Runs a component's main.ts: help, configuration, start-up and its process lifetime from then on. */
export async function runComponent<C>(component: Component<C>): Promise<void> {
  if (process.argv.includes("--help") || process.argv.includes("-h")) {
    process.stdout.write(helpText(component));
    process.exit(0);
  }
  const log = createLogger(component.name);
  try {
    const service = await component.start(component.load(), log);
    stopOnSignals(service, log);
    if (component.compactHeapWhenIdle) {
      const mib = (bytes: number) => Math.round(bytes / 2 ** 20);
      compactHeapWhenIdle({
        onCompact: (r) =>
          log.info(
            {
              heapMiB: [mib(r.heapBefore), mib(r.heapAfter)],
              rssMiB: [mib(r.rssBefore), mib(r.rssAfter)],
              ms: Math.round(r.ms),
            },
            "idle: heap compacted",
          ),
      });
    }
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n\nRun with --help to list every setting.\n`);
      process.exit(2);
    }
    log.fatal({ err: error }, `${component.name} failed to start`);
    process.exit(1);
  }
}

function stopOnSignals(service: RunningService, log: Logger): void {
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
}
