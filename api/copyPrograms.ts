/**
 * What the coursework programs (coursework/copy.ts, run by the operator and the user-manager in
 * short-lived pods that mount a volume) and the services that start them and read their output
 * agree on: a copy's limits and what an upload reports. Below both, so neither imports the other.
 */

export interface Limits {
  /** Entries (files, folders, links and anything else) in the whole folder. */
  maxFiles: number;
  /** Bytes of all regular files together. */
  maxBytes: number;
  /** Folders inside folders: `a/b/c.txt` is 2 deep. */
  maxDepth: number;
  /** Bytes of an entry's path inside the folder (UTF-8). */
  maxPathLength: number;
}

export const DEFAULT_LIMITS: Readonly<Limits> = {
  maxFiles: 10_000,
  maxBytes: 512 * 1024 * 1024,
  maxDepth: 32,
  maxPathLength: 1024,
};

export interface UploadSummary {
  /** Files written into the target. */
  files: number;
  bytes: number;
  /** manifest.ts's hash of the written files, by their paths inside the target. */
  sha256: string;
  /** students layout: each student's folder that got files, as the teacher named it. */
  students: { name: string; folder: string; files: number }[];
  /** students layout: top-level names that match no student, with the files not written. */
  unknown: { name: string; files: number }[];
}
