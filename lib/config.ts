/**
 * Start-up configuration from environment variables.
 *
 * Every component declares its settings once, with a description; `loadConfig` reads them all,
 * collects every problem at once and fails with a message that names each variable to set, so an
 * admin fixes a deployment in one pass instead of one crash per missing variable.
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
}

export type Settings = Record<string, Setting<unknown>>;

/** A setting without a default: start-up fails with its description when it is unset. */
export const required = <T>(env: string, description: string, p: (raw: string) => T): Setting<T> => ({
  env,
  description,
  parse: p,
});
export const optional = <T>(
  env: string,
  description: string,
  p: (raw: string) => T,
): Setting<T | undefined> => ({ env, description, parse: p, default: undefined });
export const withDefault = <T>(
  env: string,
  description: string,
  p: (raw: string) => T,
  dflt: T,
): Setting<T> => ({ env, description, parse: p, default: dflt });
export type ConfigOf<S extends Settings> = { [K in keyof S]: S[K] extends Setting<infer T> ? T : never };

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(component: string, problems: string[]) {
    super(`${component}: invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "ConfigError";
    this.problems = problems;
  }
}

export function loadConfig<S extends Settings>(
  component: string,
  settings: S,
  env: NodeJS.ProcessEnv = process.env,
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
  if (problems.length > 0) throw new ConfigError(component, problems);
  return result as ConfigOf<S>;
}

/** One line per setting, for `--help`. */
export function describeSettings(settings: Settings): string {
  return Object.values(settings)
    .map((s) => {
      const dflt = "default" in s ? ` (default: ${JSON.stringify(s.default)})` : " (required)";
      return `  ${s.env.padEnd(34)} ${s.description}${dflt}`;
    })
    .join("\n");
}

export const parse = {
  string: (raw: string): string => raw,
  integer:
    (min: number, max: number) =>
    (raw: string): number => {
      const n = Number(raw);
      if (!Number.isInteger(n) || n < min || n > max)
        throw new Error(`expected a whole number from ${min} to ${max}`);
      return n;
    },
  boolean: (raw: string): boolean => {
    if (/^(1|true|yes|on)$/i.test(raw)) return true;
    if (/^(0|false|no|off)$/i.test(raw)) return false;
    throw new Error("expected true or false");
  },
  url: (raw: string): URL => {
    try {
      return new URL(raw);
    } catch {
      throw new Error("expected an absolute URL such as https://example.org/");
    }
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
  /** Durations such as "30s", "15m", "2h" or plain milliseconds. */
  duration: (raw: string): number => {
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(raw.trim());
    if (!m) throw new Error('expected a duration such as "500ms", "30s", "15m" or "2h"');
    const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] ?? "ms"] ?? 1;
    return Number(m[1]) * unit;
  },
};
