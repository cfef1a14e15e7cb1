/**
 * Start-up configuration from environment variables.
 *
 * Every component declares its settings once, with a description; `loadConfig` reads them all,
 * collects every problem at once and fails with a message that names each variable to set, so an
 * admin fixes a deployment in one pass instead of one crash per missing variable.
 */

import { parseDuration } from "../api/duration.ts";

/**
 * One setting, declared in its component's settings table, e.g.
 * `port: { env: "AUTH_PORT", description: "Port to listen on", parse: parse.port, default: 8080 }`.
 */
export interface Setting<T> {
  /** Environment variable name. */
  env: string;
  /** What the setting is, shown in errors and `--help`. */
  description: string;
  /** Turns the raw string into a value, or throws an Error whose message says what is expected. */
  parse: (raw: string) => T;
  /** Used when the variable is unset; a setting without a default is required. */
  default?: T;
  /** How `--help` writes the default, e.g. formatDuration (method syntax: each table narrows T). */
  show?(value: T): string;
}

export type Settings = Record<string, Setting<unknown>>;

/** A setting's value: what its parser returns, or undefined when that is its default. */
type ValueOf<S> = S extends { parse: (raw: string) => infer T }
  ? T | (S extends { default: undefined } ? undefined : never)
  : never;

export type ConfigOf<S extends Settings> = { [K in keyof S]: ValueOf<S[K]> };

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(component: string, problems: string[]) {
    super(`${component}: invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "ConfigError";
    this.problems = problems;
  }
}

/**
 * `alongside`: problems the caller found before loading (e.g. no login provider set), reported after
 * the settings' own when any setting is wrong, so that one pass fixes a deployment.
 */
export function loadConfig<S extends Settings>(
  component: string,
  settings: S,
  env: NodeJS.ProcessEnv = process.env,
  alongside: readonly string[] = [],
): ConfigOf<S> {
  const problems: string[] = [];
  const result: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(settings)) {
    const raw = env[setting.env];
    if (raw === undefined || raw === "") {
      if ("default" in setting) result[key] = setting.default;
      else problems.push(`set ${setting.env}: ${setting.description}`);
      continue;
    }
    try {
      result[key] = setting.parse(raw);
    } catch (error) {
      problems.push(`${setting.env}=${JSON.stringify(raw)} is invalid: ${(error as Error).message}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(component, [...problems, ...alongside]);
  return result as ConfigOf<S>;
}

/** One line per setting, for `--help`. */
export function describeSettings(settings: Settings): string {
  return Object.values(settings)
    .map((s) => helpLine(s.env, `${s.description}${defaultText(s)}`))
    .join("\n");
}

/** One `--help` line; also for variables read outside a settings table (LOG_LEVEL, KUBECONFIG). */
export function helpLine(env: string, text: string): string {
  return `  ${env.padEnd(34)} ${text}`;
}

function defaultText(s: Setting<unknown>): string {
  if (!("default" in s)) return " (required)";
  if (s.default === undefined) return " (optional)";
  return ` (default: ${s.show ? s.show(s.default) : JSON.stringify(s.default)})`;
}

function integer(min: number, max: number): (raw: string) => number {
  return (raw) => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new Error(`expected a whole number from ${min} to ${max}`);
    return n;
  };
}

const DURATION_EXPECTED = 'expected a duration such as "500ms", "30s", "15m" or "1h30m"';

function duration(raw: string): number {
  const text = raw.trim();
  // A bare number has always meant milliseconds in settings (never in the CRD).
  const ms = /^\d+(\.\d+)?$/.test(text) ? Number(text) : parseDuration(text);
  if (ms === undefined) throw new Error(DURATION_EXPECTED);
  return ms;
}

function url(raw: string): URL {
  try {
    return new URL(raw);
  } catch {
    throw new Error("expected an absolute URL such as https://example.org/");
  }
}

export const parse = {
  string: (raw: string): string => raw,
  integer,
  port: integer(0, 65535),
  boolean: (raw: string): boolean => {
    if (/^(1|true|yes|on)$/i.test(raw)) return true;
    if (/^(0|false|no|off)$/i.test(raw)) return false;
    throw new Error("expected true or false");
  },
  url,
  /** URLs the service itself fetches or sends browsers to: nothing but http(s). */
  httpUrl: (raw: string): URL => {
    const parsed = url(raw);
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
      throw new Error("expected an http:// or https:// URL");
    return parsed;
  },
  list: (raw: string): string[] =>
    raw
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
  oneOf:
    <T extends string>(...choices: T[]) =>
    (raw: string): T => {
      if ((choices as string[]).includes(raw)) return raw as T;
      throw new Error(`expected one of ${choices.join(", ")}`);
    },
  /** Durations as in the CRD ("30s", "15m", "1h30m"), or plain milliseconds, in milliseconds. */
  duration,
  positiveDuration: (raw: string): number => {
    const ms = duration(raw);
    if (ms <= 0) throw new Error("expected a duration above zero");
    return ms;
  },
};

/**
 * A service's two listeners: the main one, `<prefix>_HOST` and `<prefix>_PORT`, and the admin one,
 * `<prefix>_ADMIN_HOST` and `<prefix>_ADMIN_PORT` (/metrics, and the probes where the service has
 * them there): a port of its own that no Ingress or HTTPRoute routes, so the internet never sees the
 * counters. `describe` says what the admin port serves and, where more is to say than "Address/Port
 * to listen on", what the main one does, for `--help`; `problem` says why the two cannot both start
 * as configured.
 */
export function serviceListeners(prefix: string, describe: { admin: string; host?: string; port?: string }) {
  const { host = "Address to listen on", port = "Port to listen on" } = describe;
  return {
    settings: {
      host: { env: `${prefix}_HOST`, description: host, parse: parse.string, default: "0.0.0.0" },
      port: { env: `${prefix}_PORT`, description: port, parse: parse.port, default: 8080 },
      adminHost: {
        env: `${prefix}_ADMIN_HOST`,
        description: `Address for ${describe.admin} (not for students)`,
        parse: parse.string,
        default: "0.0.0.0",
      },
      adminPort: {
        env: `${prefix}_ADMIN_PORT`,
        description: `Port for ${describe.admin}`,
        parse: parse.port,
        default: 9090,
      },
    } satisfies Settings,
    problem(c: { host: string; port: number; adminHost: string; adminPort: number }): string | undefined {
      // Port 0 is any free port: two of them never collide.
      if (c.port !== 0 && c.port === c.adminPort && c.host === c.adminHost)
        return `${prefix}_PORT and ${prefix}_ADMIN_PORT must differ`;
      return undefined;
    },
  };
}
