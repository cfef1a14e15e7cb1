/**
 * Gradescope's results.json (docs/decisions/0015-grading.md), read as real autograders write it:
 * gradescope-utils writes `execution_time` as a string and scores may be strings too, keys of their
 * own are ignored, and a test without a status is passed when it has its full score. What cannot be
 * read is an error with a message a teacher can act on, never an exception or a zero score.
 */
import { TEST_VISIBILITIES } from "../../api/v1alpha1/coursework.ts";

/** Gradescope's visibility values (the CRD's); an unknown one is treated as hidden (the safe reading). */
export type Visibility = (typeof TEST_VISIBILITIES)[number];

export interface ResultTest {
  name: string;
  score?: number;
  maxScore?: number;
  status?: "passed" | "failed";
  visibility: Visibility;
  output?: string;
}

export interface Results {
  /** The top-level score when given, else the sum of the tests' scores. */
  score: number;
  /** The sum of the tests' max_score, when any test has one. */
  maxScore?: number;
  executionSeconds?: number;
  output?: string;
  stdoutVisibility: Visibility;
  tests: ResultTest[];
}

export type ParsedResults = { ok: true; results: Results } | { ok: false; message: string };

/** Longest test name kept (the CRD's bound). */
const NAME_MAX = 200;

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** A number, or a string holding one (gradescope-utils writes some as strings); else undefined. */
export function lenientNumber(value: unknown): number | undefined {
  const n =
    typeof value === "number"
      ? value
      : typeof value === "string" && /^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$/.test(value)
        ? Number(value)
        : undefined;
  return n !== undefined && Number.isFinite(n) ? n : undefined;
}

function visibilityOf(value: unknown, fallback: Visibility): Visibility {
  if (value === undefined) return fallback;
  return (TEST_VISIBILITIES as readonly unknown[]).includes(value) ? (value as Visibility) : "hidden";
}

const text = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

/**
 * Parses results.json's text. The JSON parser's own message is not passed on: it quotes the text,
 * and a results.json the submission wrote could quote files the student must not see.
 */
export function parseResults(json: string): ParsedResults {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return { ok: false, message: "results.json invalid: it is not JSON" };
  }
  if (!isObject(value)) return { ok: false, message: "results.json invalid: it is not a JSON object" };
  const top = value;
  const topVisibility = visibilityOf(top.visibility, "visible");
  const rawTests = top.tests;
  if (rawTests !== undefined && !Array.isArray(rawTests))
    return { ok: false, message: "results.json invalid: tests is not a list" };
  const tests: ResultTest[] = [];
  for (const [i, raw] of (rawTests ?? []).entries()) {
    if (!isObject(raw)) return { ok: false, message: `results.json invalid: tests[${i}] is not an object` };
    const score = lenientNumber(raw.score);
    const maxScore = lenientNumber(raw.max_score);
    const status =
      raw.status === "passed" || raw.status === "failed"
        ? raw.status
        : score !== undefined && maxScore !== undefined
          ? score >= maxScore
            ? "passed"
            : "failed"
          : undefined;
    const number = text(raw.number) ?? (typeof raw.number === "number" ? String(raw.number) : undefined);
    const name = text(raw.name) ?? `Test ${number ?? i + 1}`;
    tests.push({
      name: name.length > NAME_MAX ? `${name.slice(0, NAME_MAX - 1)}…` : name,
      ...(score !== undefined ? { score } : {}),
      ...(maxScore !== undefined ? { maxScore } : {}),
      ...(status ? { status } : {}),
      visibility: visibilityOf(raw.visibility, topVisibility),
      ...(text(raw.output) !== undefined ? { output: text(raw.output) } : {}),
    });
  }
  const topScore = lenientNumber(top.score);
  const scored = tests.filter((t) => t.score !== undefined);
  if (topScore === undefined && scored.length === 0)
    return {
      ok: false,
      message: "results.json invalid: it has no score (neither a top-level score nor tests with a score)",
    };
  const maxed = tests.filter((t) => t.maxScore !== undefined);
  const executionSeconds = lenientNumber(top.execution_time);
  return {
    ok: true,
    results: {
      score: topScore ?? scored.reduce((sum, t) => sum + (t.score ?? 0), 0),
      ...(maxed.length > 0 ? { maxScore: maxed.reduce((sum, t) => sum + (t.maxScore ?? 0), 0) } : {}),
      ...(executionSeconds !== undefined ? { executionSeconds } : {}),
      ...(text(top.output) !== undefined ? { output: text(top.output) } : {}),
      stdoutVisibility: visibilityOf(top.stdout_visibility, "hidden"),
      tests,
    },
  };
}
