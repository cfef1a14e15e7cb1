/**
 * `copy.ts receive-upload`: an upload pod's one job (docs/decisions/0011-coursework.md, "Uploads"),
 * the reverse of serve-archive. It receives files into a folder from exactly one caller, over one
 * or more requests, and ends once the caller commits (or anything is refused): the user-manager
 * dials the pod with the bearer token whose SHA-256 the pod was started with and streams a
 * teacher's files into it as they arrive from the browser. Nothing is held in memory: each body
 * goes to a staging file as it is read (files/upload.ts).
 *
 *   PUT  /file?path=<relative path>   one file's bytes
 *   PUT  /zip                         a zip; its entries become files of the upload
 *   POST /commit                      moves the upload into place; answers the summary and ends
 *
 * One request at a time (another one meanwhile is a 409). A limit passed or a refused name, link or
 * zip is answered 413/422 with the message, the staged files are removed and the program ends: an
 * upload is taken whole or not at all. A wrong or missing token is a 401 that changes nothing.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { PassThrough } from "node:stream";
import { UnsafePathError } from "./files/beneath.ts";
import { LimitError } from "./files/limits.ts";
import type { Limits, UploadSummary } from "../api/copyPrograms.ts";
import { NameError } from "./files/names.ts";
import { Upload, UploadError, type UploadLayout } from "./files/upload.ts";
import { WaitExpiredError } from "./serveArchive.ts";

export interface ReceiveOptions {
  root: string;
  limits: Limits;
  layout: UploadLayout;
  host: string;
  port: number;
  /** Hex SHA-256 of the bearer token the one caller presents. */
  tokenSha256: string;
  /** Ends with WaitExpiredError when no request comes for this long (first or next). */
  waitMs: number;
  onListening?: (port: number) => void;
}

function presented(request: IncomingMessage): Buffer | undefined {
  const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(request.headers.authorization ?? "");
  return match ? createHash("sha256").update(match[1]!).digest() : undefined;
}

function answer(
  response: ServerResponse,
  status: number,
  body: object,
  headers: Record<string, string> = {},
) {
  response.writeHead(status, { "content-type": "application/json", ...headers });
  response.end(`${JSON.stringify(body)}\n`);
}

/** The status a refusal is answered with: 413 for a limit, 422 for what the upload holds, else 500. */
export function statusOf(error: unknown): number {
  if (error instanceof LimitError) return 413;
  if (error instanceof NameError || error instanceof UploadError || error instanceof UnsafePathError)
    return 422;
  return 500;
}

/** Receives one upload and resolves with what was written once committed; rejects when refused. */
export async function receiveUploadOnce(options: ReceiveOptions): Promise<UploadSummary> {
  const expected = Buffer.from(options.tokenSha256, "hex");
  const upload = await Upload.begin(options.root, options.limits);
  let busy = false;
  let over = false;
  let settle!: { resolve: (s: UploadSummary) => void; reject: (e: unknown) => void };
  const done = new Promise<UploadSummary>((resolve, reject) => {
    settle = { resolve, reject };
  });
  let wait: NodeJS.Timeout | undefined;
  const idle = () => {
    clearTimeout(wait);
    wait = setTimeout(
      () =>
        settle.reject(
          new WaitExpiredError(`nobody sent the upload within ${Math.round(options.waitMs / 1000)} s`),
        ),
      options.waitMs,
    );
  };

  async function handle(request: IncomingMessage, url: URL): Promise<object> {
    // Through a PassThrough: a refusal mid-body destroys that, not the request, whose rest is then
    // read and dropped so the caller gets the answer.
    const body = new PassThrough();
    request.pipe(body);
    if (request.method === "PUT" && url.pathname === "/file") {
      const path = url.searchParams.get("path") ?? "";
      const record = await upload.addFile(path, body);
      return { path: record.path, bytes: record.bytes, sha256: record.sha256 };
    }
    if (request.method === "PUT" && url.pathname === "/zip") return { files: await upload.addZip(body) };
    request.resume();
    return upload.commit(options.layout);
  }

  const server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://upload");
    const routes = ["PUT /file", "PUT /zip", "POST /commit"];
    if (!["/file", "/zip", "/commit"].includes(url.pathname))
      return answer(response, 404, { error: "not found" });
    if (!routes.includes(`${request.method} ${url.pathname}`))
      return answer(response, 405, { error: `only ${routes.join(", ")}` });
    const hash = presented(request);
    if (!hash || !timingSafeEqual(hash, expected))
      return answer(
        response,
        401,
        { error: "a valid bearer token is required" },
        { "www-authenticate": "Bearer" },
      );
    if (over) return answer(response, 410, { error: "the upload has ended" });
    if (busy) return answer(response, 409, { error: "one request at a time" });
    busy = true;
    clearTimeout(wait);
    handle(request, url).then(
      (result) => {
        busy = false;
        if (url.pathname === "/commit") {
          over = true;
          answer(response, 200, result, { connection: "close" });
          settle.resolve(result as UploadSummary);
        } else {
          idle();
          answer(response, 200, result);
        }
      },
      (error: unknown) => {
        over = true;
        // The rest of a refused body is read and dropped, so the caller reads the answer rather than
        // a reset connection (the user-manager never sends more than its own limits).
        request.unpipe();
        request.resume();
        const reply = () => {
          response.once("close", () => settle.reject(error));
          answer(response, statusOf(error), { error: (error as Error).message }, { connection: "close" });
        };
        if (request.readableEnded) reply();
        else {
          // A sender that never finishes its body is ended by the wait.
          idle();
          request.once("end", reply).once("error", () => settle.reject(error));
        }
      },
    );
  });
  // A body arrives at the sender's pace: no timeout may cut a slow upload (--wait bounds idleness).
  server.requestTimeout = 0;
  server.headersTimeout = 10_000;

  // Kubernetes stops the pod (its Archive deleted: the sender gave up): the staged files go too.
  const stop = () => settle.reject(new Error("stopped before the upload was committed"));
  process.once("SIGTERM", stop);
  idle();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port, options.host, () => resolve());
    });
    options.onListening?.((server.address() as AddressInfo).port);
    return await done;
  } finally {
    process.off("SIGTERM", stop);
    clearTimeout(wait);
    await upload.close();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
      // Every answer is written by now; a sender still sending after the wait is cut off.
      setTimeout(() => server.closeAllConnections(), 2000).unref();
    });
  }
}
