/**
 * The first step of a grading pod, run from the platform's image before the autograder's image gets
 * a turn (docs/decisions/0015-grading.md): check that the hand-in mounted for grading is the one its
 * receipt names, and lay out Gradescope's /autograder: the autograder's snapshot as a writable
 * `source/` (autograders copy the submission into it), `run_autograder` beside it,
 * `submission_metadata.json` and an empty `results/`.
 */
import { chmod, copyFile, lstat, mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { copyTree } from "../files/copy.ts";
import { hashTree } from "../files/hashTree.ts";
import type { Limits } from "../../api/copyPrograms.ts";

/** The hand-in is not what its receipt says: it must not be graded. */
export class HandInChangedError extends Error {
  constructor(expected: string, found: string, skipped: number) {
    super(
      `the hand-in's files hash to ${found}, not to its receipt's ${expected}${skipped ? ` (${skipped} entries could not be read)` : ""}: it was not graded`,
    );
    this.name = "HandInChangedError";
  }
}

/** The autograder's snapshot has no run_autograder at its top. */
export class NoRunAutograderError extends Error {
  constructor() {
    super("the autograder's folder has no run_autograder at its top (Gradescope's layout)");
    this.name = "NoRunAutograderError";
  }
}

export interface PrepareInput {
  /** The hand-in as the autograder will see it (a read-only mount). */
  submission: string;
  /** Its receipt's SHA-256. */
  receiptSha256: string;
  /** The autograder's snapshot (read-only). */
  autograder: string;
  /** Gradescope's /autograder: an empty, writable folder. */
  work: string;
  /** submission_metadata.json's content. */
  metadata: Record<string, unknown>;
  limits: Limits;
}

export async function prepare(input: PrepareInput): Promise<{ files: number; sourceFiles: number }> {
  const found = await hashTree(input.submission, input.limits);
  if (found.sha256 !== input.receiptSha256 || found.skipped.length > 0)
    throw new HandInChangedError(input.receiptSha256, found.sha256, found.skipped.length);
  if (!(await lstat(join(input.autograder, "run_autograder")).catch(() => undefined))?.isFile())
    throw new NoRunAutograderError();
  const source = join(input.work, "source");
  const receipt = await copyTree(input.autograder, source, input.limits);
  // The snapshot is read-only and keeps no modes: Gradescope's zip gives the autograder's files
  // their owner's write and execute rights, and autograders rely on both.
  await openUp(source);
  await copyFile(join(source, "run_autograder"), join(input.work, "run_autograder"));
  await chmod(join(input.work, "run_autograder"), 0o755);
  await writeFile(
    join(input.work, "submission_metadata.json"),
    `${JSON.stringify(input.metadata, null, 2)}\n`,
  );
  // In the pod results/ is a volume of its own, mounted there already.
  await mkdir(join(input.work, "results"), { recursive: true, mode: 0o755 });
  return { files: found.files.length, sourceFiles: receipt.files.length };
}

/** Folders 0755 and files 0755 below `dir` (copyTree made them read-only; it never makes links). */
async function openUp(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await openUp(path);
    else if (entry.isFile()) await chmod(path, 0o755);
  }
}
