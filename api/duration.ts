/**
 * Durations, one syntax everywhere: Kubernetes' ("90s", "30m", "1h30m", "500ms"). The CRD validates
 * Template.spec.idleTimeout with DURATION_PATTERN, the operator parses it with parseDuration, and
 * every component's settings (lib/config.ts) parse and print theirs with the same two functions.
 */

/** Milliseconds per unit. */
const UNITS = { ms: 1, h: 3_600_000, m: 60_000, s: 1000 } as const;
type Unit = keyof typeof UNITS;

const NUMBER = "[0-9]+(\\.[0-9]+)?";
/** "ms" before "m" and "s": the alternation takes the first that matches. */
const UNIT = "(ms|s|m|h)";

/** The whole syntax as a JSON-schema pattern, for the CRD. */
export const DURATION_PATTERN = `^(${NUMBER}${UNIT})+$`;

const PART = new RegExp(`(${NUMBER})${UNIT}`, "g");
const WHOLE = new RegExp(DURATION_PATTERN);

/** Milliseconds, or undefined when `text` is not a duration. */
export function parseDuration(text: string): number | undefined {
  if (!WHOLE.test(text)) return undefined;
  let sum = 0;
  for (const part of text.matchAll(PART)) sum += Number(part[1]) * UNITS[part[3] as Unit];
  return sum;
}

/** The shortest text parseDuration reads back as `ms`, e.g. 5_400_000 → "1h30m", 1500 → "1s500ms". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`${ms} is not a duration`);
  if (ms === 0) return "0s";
  let rest = ms;
  let text = "";
  for (const unit of ["h", "m", "s"] as const) {
    const whole = Math.floor(rest / UNITS[unit]);
    if (whole > 0) {
      text += `${whole}${unit}`;
      rest -= whole * UNITS[unit];
    }
  }
  return rest > 0 ? `${text}${rest}ms` : text;
}
