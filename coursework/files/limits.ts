/**
 * The limits of one copy (hand-in, distribution, archive) and the error that stops it when a student's
 * folder passes one. The message is shown to the student as it is, so it says in plain words which
 * limit, what was found and what to do.
 */
import type { Limits } from "../../api/copyPrograms.ts";

export class LimitError extends Error {
  readonly limit: keyof Limits;
  /** The limit's value, e.g. 10000 for maxFiles. */
  readonly value: number;
  constructor(limit: keyof Limits, value: number, message: string) {
    super(message);
    this.name = "LimitError";
    this.limit = limit;
    this.value = value;
  }
}

/** A path for a message: long ones keep their start and end. */
export function showPath(path: string): string {
  const shown = path.length > 120 ? `${path.slice(0, 60)}…${path.slice(-59)}` : path;
  return JSON.stringify(shown);
}

const TRY_AGAIN = "Remove what you do not need (downloaded data, build output, caches) and try again.";

export const limitErrors = {
  files: (limits: Limits) =>
    new LimitError(
      "maxFiles",
      limits.maxFiles,
      `Too many files: the folder holds more than ${limits.maxFiles} files and folders, and the limit is ${limits.maxFiles}. ${TRY_AGAIN}`,
    ),
  bytes: (limits: Limits, path: string, size: number) =>
    new LimitError(
      "maxBytes",
      limits.maxBytes,
      `Too much data: the files add up to more than ${formatBytes(limits.maxBytes)}, the limit; ` +
        `it was passed at ${showPath(path)} (${formatBytes(size)}). ${TRY_AGAIN}`,
    ),
  depth: (limits: Limits, path: string) =>
    new LimitError(
      "maxDepth",
      limits.maxDepth,
      `Folders nested too deep: ${showPath(path)} lies more than ${limits.maxDepth} folders deep, and the limit is ${limits.maxDepth}. Move it up or remove it and try again.`,
    ),
  pathLength: (limits: Limits, path: string) =>
    new LimitError(
      "maxPathLength",
      limits.maxPathLength,
      `A name is too long: ${showPath(path)} is ${Buffer.byteLength(path)} bytes long with its folders, and the limit is ${limits.maxPathLength}. Rename it and try again.`,
    ),
};

const UNITS = ["KiB", "MiB", "GiB", "TiB"] as const;
const FACTORS: Record<string, number> = {
  "": 1,
  b: 1,
  k: 1000,
  kb: 1000,
  m: 1000 ** 2,
  mb: 1000 ** 2,
  g: 1000 ** 3,
  gb: 1000 ** 3,
  t: 1000 ** 4,
  tb: 1000 ** 4,
  ki: 1024,
  kib: 1024,
  mi: 1024 ** 2,
  mib: 1024 ** 2,
  gi: 1024 ** 3,
  gib: 1024 ** 3,
  ti: 1024 ** 4,
  tib: 1024 ** 4,
};

/** "512MiB", "1Gi", "2GB", "1000" (bytes) → a whole number of bytes; Kubernetes' suffixes work too. */
export function parseBytes(raw: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(raw);
  const factor = match ? FACTORS[match[2]!.toLowerCase()] : undefined;
  if (!match || factor === undefined) {
    throw new Error(`expected a size such as 1000, 500MB, 512MiB or 2GiB, got ${JSON.stringify(raw)}`);
  }
  const bytes = Math.floor(Number(match[1]) * factor);
  if (!Number.isSafeInteger(bytes) || bytes <= 0) throw new Error(`expected a positive size, got ${raw}`);
  return bytes;
}

/** 1536 → "1.5 KiB"; whole units without decimals. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  const shown = Number.isInteger(value) ? String(value) : value.toFixed(1);
  return `${shown} ${UNITS[unit]}`;
}
