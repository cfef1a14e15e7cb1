/**
 * The program the platform's short-lived copying pods run (`node coursework/copy.ts …`): a hand-in
 * snapshot, an assignment's distribution, or a folder as a zip (on stdout, or served once over HTTP
 * by an archive pod). The work is done by coursework/files/;
 * this file reads the arguments and reports the result: JSON on stdout (stderr for `archive`, whose
 * stdout is the zip) and, shortened to Kubernetes' 4096 bytes, in the termination message.
 */
import { parseArgs } from "node:util";
import { archiveTree } from "./files/archive.ts";
import { sendFile, verifyClassArchive, writeClassArchive } from "./files/classArchive.ts";
import { dirname, resolve } from "node:path";
import { openFolder, UnsafePathError } from "./files/beneath.ts";
import { copyTree, DestinationExistsError } from "./files/copy.ts";
import { writeTextFile } from "./files/writeText.ts";
import { distribute, MANIFEST_NAME } from "./files/distribute.ts";
import { formatBytes, LimitError, parseBytes } from "./files/limits.ts";
import { DEFAULT_LIMITS, type Limits } from "../api/copyPrograms.ts";
import { writeTerminationLog } from "./files/report.ts";
import { serveArchiveOnce, WaitExpiredError } from "./serveArchive.ts";
import { receiveUploadOnce } from "./receiveUpload.ts";
import { NameError } from "./files/names.ts";
import { UploadError } from "./files/upload.ts";
import { studentsLayout, studentZipNames } from "./files/studentFolders.ts";

const HELP = `Usage: node coursework/copy.ts <command> <folders…> [options]

Copies a student's coursework safely: never through a symbolic link (anywhere in a path), never
opening a FIFO, socket or device (they are listed as skipped, with the reason), and stopping at the
limits below with a message for the student.

Commands:
  handin <from> <to>       Copy the folder <from> into the new folder <to> (it must not exist; its
                           missing parents are made, never through a link), made read-only; prints the receipt: each file's size and SHA-256, the total,
                           the SHA-256 of the sorted manifest (as sha256sum prints it), what was
                           skipped, when the copy started and, with --moment, which files were
                           written after the moment. The platform's own .userland-assignment.json
                           (distribute's) is not the student's work: neither copied nor counted.
  write-file <to> --text TEXT
                           Write TEXT as the file <to> (its missing folders made, never through a
                           link; the file replaced by a rename, a link at its name included): a
                           released grade in a student's feedback folder. Prints its size and SHA-256.
  distribute <from> <to>   Publish the assignment folder <from> into a student's folder <to> by
                           nbgitpuller's rule: missing files are written, files the student has not
                           changed since the last delivery are updated, the student's changes are
                           kept and listed; nothing is deleted. <to>/.userland-assignment.json
                           records what was delivered.
  archive <from>           Write the folder <from> as a zip to stdout; prints the summary to stderr.
  archive-class <zip> --folder <name>=<path>…
                           Write the folders as one stored zip to <zip> (each under <name>/) and
                           their manifest beside it (<zip> with .json): per folder its files, bytes,
                           manifest SHA-256 and what of it could not be archived. A folder that
                           cannot be walked or read whole is listed as incomplete. Prints the
                           totals, the incomplete folders and the manifest's SHA-256.
  verify-archive <zip> --manifest-sha256 HEX
                           Read <zip> back (every entry through its local header, CRC-checked) and
                           recompute each folder's manifest SHA-256; prints which folders match the
                           manifest (whose own SHA-256 must be HEX).
  serve-file <file>        Like serve-archive, for a zip that exists already (a class's archive).
  serve-archive <from>     Serve the folder <from> as a zip once, over HTTP: GET /archive.zip with
                           "Authorization: Bearer <token>" whose SHA-256 is --token-sha256 streams
                           it; a wrong or missing token is a 401 (and uses nothing up), any request
                           after the first right one a 410. Exits once that one answer is written
                           (a limit or a refused folder is answered 413/422 with the message), or
                           after --wait when nobody came; prints the summary. An archive pod's job.
  receive-upload <to>      Receive files into the folder <to> over HTTP, from the one caller whose
                           bearer token's SHA-256 is --token-sha256: PUT /file?path=<path> (one
                           file), PUT /zip (a zip's files and folders; links, FIFOs, devices and
                           encrypted entries refused), then POST /commit moves them into <to>
                           (replacing files of the same path, deleting nothing) and ends. A limit
                           or a refused name ends it with a 413/422 and nothing written. With
                           --student, the upload's top-level folders name students (see below).
                           An upload pod's job.

Options:
  --max-files N            Files and folders in <from>, at most (default ${DEFAULT_LIMITS.maxFiles})
  --max-bytes SIZE         Bytes of all files together, e.g. 100MiB (default ${formatBytes(DEFAULT_LIMITS.maxBytes)})
  --max-depth N            Folders inside folders (default ${DEFAULT_LIMITS.maxDepth})
  --max-path-length N      Bytes of a path inside <from> (default ${DEFAULT_LIMITS.maxPathLength})
  --folder NAME=PATH       archive-class: a folder to archive (repeat it)
  --manifest-sha256 HEX    verify-archive: the manifest's SHA-256 as archive-class printed it
  --text TEXT              write-file: what the file holds
  --moment TIME            handin: the hand-in's moment (ISO 8601; in whole seconds it stands for the
                           whole second); files whose change time is later
                           are listed as writtenAfter (they are copied as they were when read)
  --store                  archive, serve-archive: store the files without compressing them
  --token-sha256 HEX       serve-archive, serve-file, receive-upload: the SHA-256 (64 hex digits) of the one caller's token
  --port N                 serve-archive, serve-file, receive-upload: the port to listen on (default 8080; 0: any)
  --host ADDRESS           serve-archive, serve-file, receive-upload: the address to listen on (default 0.0.0.0)
  --wait SECONDS           serve-archive, serve-file, receive-upload: how long to wait for the caller
                           (receive-upload: for each next request too; default 600)
  --student USER           receive-upload, repeated: the upload's top-level folders are students'
                           (USER, or its folder in the collection), each written to that folder;
                           files of other top-level folders are listed as unknown, not written.
                           serve-archive, repeated: the folder's top-level folders are students'
                           folders in the collection, named USER in the zip where USER is a plain
                           file name no other student's name equals
  --termination-log PATH   Where the shortened result goes, when the file exists
                           (default /dev/termination-log)
  -h, --help               This text

Exit codes: 0 done (skipped and kept entries are listed in the result); 1 failed (an I/O error);
2 invalid arguments; 3 the folder passes a limit (the message names it); 4 refused: a folder's path
is missing, goes through a symbolic link or names no folder, or <to> exists already (handin), or
an upload holds a refused name, link or unreadable zip;
5 serve-archive, receive-upload: nobody came within --wait.
`;

const EXIT = { failed: 1, usage: 2, limit: 3, refused: 4, unclaimed: 5 } as const;

class UsageError extends Error {}

function positiveInteger(flag: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) <= 0 || !Number.isSafeInteger(Number(raw))) {
    throw new UsageError(`--${flag} must be a positive whole number, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

function parse(argv: string[]) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        "max-files": { type: "string" },
        "max-bytes": { type: "string" },
        "max-depth": { type: "string" },
        "max-path-length": { type: "string" },
        store: { type: "boolean" },
        moment: { type: "string" },
        text: { type: "string" },
        folder: { type: "string", multiple: true },
        "manifest-sha256": { type: "string" },
        "token-sha256": { type: "string" },
        port: { type: "string" },
        host: { type: "string" },
        wait: { type: "string" },
        student: { type: "string", multiple: true },
        "termination-log": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return { help: true as const };
  const [command, ...folders] = positionals;
  const arity = {
    handin: 2,
    distribute: 2,
    archive: 1,
    "serve-archive": 1,
    "serve-file": 1,
    "archive-class": 1,
    "verify-archive": 1,
    "receive-upload": 1,
    "write-file": 1,
  } as const;
  if (command === undefined)
    throw new UsageError(
      "name a command: handin, distribute, archive, serve-archive, serve-file, archive-class, verify-archive, receive-upload or write-file",
    );
  if (!Object.hasOwn(arity, command)) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  const wanted = arity[command as keyof typeof arity];
  if (folders.length !== wanted || folders.some((f) => f === "")) {
    throw new UsageError(`${command} takes ${wanted === 1 ? "one folder" : "two folders: <from> <to>"}`);
  }
  const serving = command === "serve-archive" || command === "serve-file";
  const listens = serving || command === "receive-upload";
  if (values.store && command !== "archive" && command !== "serve-archive")
    throw new UsageError("--store applies to archive and serve-archive only");
  for (const flag of ["token-sha256", "port", "host", "wait"] as const) {
    if (values[flag] !== undefined && !listens)
      throw new UsageError(`--${flag} applies to serve-archive and receive-upload only`);
  }
  // A moment in whole seconds (as Kubernetes keeps times) may be any instant of that second: only a
  // change after the whole second is surely after it.
  const moment =
    values.moment === undefined
      ? undefined
      : new Date(Date.parse(values.moment) + (/\.\d+/.test(values.moment) ? 0 : 999));
  if (values.moment !== undefined && command !== "handin")
    throw new UsageError("--moment applies to handin only");
  if (moment !== undefined && Number.isNaN(moment.getTime()))
    throw new UsageError(
      `--moment must be a time such as 2026-12-07T09:00:00Z, got ${JSON.stringify(values.moment)}`,
    );
  if ((values.text !== undefined) !== (command === "write-file"))
    throw new UsageError("--text goes with write-file, and write-file needs it");
  if (values.student !== undefined && command !== "receive-upload" && command !== "serve-archive")
    throw new UsageError("--student applies to receive-upload and serve-archive only");
  if (values.folder !== undefined && command !== "archive-class")
    throw new UsageError("--folder applies to archive-class only");
  const classFolders = (values.folder ?? []).map((spec) => {
    const at = spec.indexOf("=");
    if (at <= 0 || at === spec.length - 1)
      throw new UsageError(`--folder takes NAME=PATH, got ${JSON.stringify(spec)}`);
    return { name: spec.slice(0, at), path: spec.slice(at + 1) };
  });
  if (command === "archive-class" && classFolders.length === 0)
    throw new UsageError("archive-class needs at least one --folder NAME=PATH");
  const manifestSha256 = values["manifest-sha256"] ?? "";
  if ((command === "verify-archive") !== /^[0-9a-f]{64}$/.test(manifestSha256))
    throw new UsageError("verify-archive (only) needs --manifest-sha256: 64 lowercase hex digits");
  if ((command === "archive-class" || command === "verify-archive") && !folders[0]!.endsWith(".zip"))
    throw new UsageError(`${command}: <zip> must end in .zip`);
  const tokenSha256 = values["token-sha256"] ?? "";
  if (listens && !/^[0-9a-f]{64}$/.test(tokenSha256))
    throw new UsageError(`${command} needs --token-sha256: the token's SHA-256 as 64 lowercase hex digits`);
  const port = values.port === undefined ? 8080 : Number(values.port);
  if (!/^\d{1,5}$/.test(values.port ?? "8080") || port > 65535)
    throw new UsageError(`--port must be a port number, got ${JSON.stringify(values.port)}`);
  let maxBytes = DEFAULT_LIMITS.maxBytes;
  if (values["max-bytes"] !== undefined) {
    try {
      maxBytes = parseBytes(values["max-bytes"]);
    } catch (error) {
      throw new UsageError(`--max-bytes: ${(error as Error).message}`);
    }
  }
  const limits: Limits = {
    maxFiles: positiveInteger("max-files", values["max-files"], DEFAULT_LIMITS.maxFiles),
    maxBytes,
    maxDepth: positiveInteger("max-depth", values["max-depth"], DEFAULT_LIMITS.maxDepth),
    maxPathLength: positiveInteger(
      "max-path-length",
      values["max-path-length"],
      DEFAULT_LIMITS.maxPathLength,
    ),
  };
  return {
    help: false as const,
    command: command as keyof typeof arity,
    from: folders[0]!,
    to: folders[1] ?? "",
    classFolders,
    manifestSha256,
    limits,
    moment,
    momentText: values.moment,
    text: values.text ?? "",
    store: values.store ?? false,
    tokenSha256,
    students: values.student,
    port,
    host: values.host ?? "0.0.0.0",
    waitSeconds: positiveInteger("wait", values.wait, 600),
    terminationLog: values["termination-log"] ?? "/dev/termination-log",
  };
}

type Args = Exclude<ReturnType<typeof parse>, { help: true }>;

/** A class's manifest lies beside its zip: `<name>.zip` → `<name>.json`. */
const manifestPathFor = (zip: string) => `${zip.slice(0, -".zip".length)}.json`;

async function run(args: Args): Promise<object> {
  switch (args.command) {
    case "handin":
      return {
        ...(await copyTree(args.from, args.to, args.limits, {
          moment: args.moment,
          platformFiles: [MANIFEST_NAME],
        })),
        ...(args.momentText ? { moment: args.momentText } : {}),
      };
    case "distribute":
      return distribute(args.from, args.to, args.limits);
    case "write-file":
      return writeTextFile(args.from, args.text);
    case "archive":
      return archiveTree(args.from, args.limits, process.stdout, { compress: !args.store });
    case "archive-class":
      return writeClassArchive(args.classFolders, args.limits, args.from, manifestPathFor(args.from));
    case "verify-archive":
      return verifyClassArchive(args.from, manifestPathFor(args.from), args.manifestSha256);
    case "receive-upload":
      return receiveUploadOnce({
        root: args.from,
        limits: args.limits,
        layout: args.students ? studentsLayout(args.students) : { kind: "files" },
        host: args.host,
        port: args.port,
        tokenSha256: args.tokenSha256,
        waitMs: args.waitSeconds * 1000,
        onListening: (port) => process.stderr.write(`copy receive-upload: listening on ${port}\n`),
      });
    case "serve-archive":
    case "serve-file":
      return serveArchiveOnce<object>({
        produce: (output) =>
          args.command === "serve-file"
            ? sendFile(args.from, output)
            : archiveTree(args.from, args.limits, output, {
                compress: !args.store,
                ...(args.students ? { topFolderNames: studentZipNames(args.students) } : {}),
              }),
        host: args.host,
        port: args.port,
        tokenSha256: args.tokenSha256,
        waitMs: args.waitSeconds * 1000,
        onListening: (port) => process.stderr.write(`copy ${args.command}: listening on ${port}\n`),
      });
  }
}

async function main(): Promise<number> {
  let args;
  try {
    args = parse(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`copy: ${(error as Error).message}\nRun with --help for the usage.\n`);
    return EXIT.usage;
  }
  if (args.help) {
    process.stdout.write(HELP);
    return 0;
  }
  // archive's stdout is the zip: its report goes to stderr.
  const report = args.command === "archive" ? process.stderr : process.stdout;
  try {
    // The operator's copy pods hand in to <collection>/<assignment>/<student>: the assignment's
    // folder may not exist yet.
    if (args.command === "handin") await (await openFolder(dirname(resolve(args.to)), true)).close();
    const result = await run(args);
    report.write(`${JSON.stringify(result)}\n`);
    writeTerminationLog(args.terminationLog, result);
    return 0;
  } catch (error) {
    const [kind, code] =
      error instanceof LimitError
        ? (["limit", EXIT.limit] as const)
        : error instanceof UnsafePathError ||
            error instanceof DestinationExistsError ||
            error instanceof NameError ||
            error instanceof UploadError
          ? (["refused", EXIT.refused] as const)
          : error instanceof WaitExpiredError
            ? (["unclaimed", EXIT.unclaimed] as const)
            : (["failed", EXIT.failed] as const);
    const failure = {
      error: {
        kind,
        message: (error as Error).message,
        ...(error instanceof LimitError ? { limit: error.limit, value: error.value } : {}),
      },
    };
    report.write(`${JSON.stringify(failure)}\n`);
    if (report !== process.stderr)
      process.stderr.write(`copy ${args.command}: ${(error as Error).message}\n`);
    writeTerminationLog(args.terminationLog, failure);
    return code;
  }
}

process.exitCode = await main();
