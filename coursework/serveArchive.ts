/**
 * `copy.ts serve-archive`: an archive pod's one job (docs/decisions/0011-coursework.md, "Downloads").
 * It serves a folder as a zip to exactly one caller, once, and then ends: the platform's
 * user-manager dials the pod, presents the bearer token whose SHA-256 the pod was started with, and
 * pipes the answer to a browser. Nothing is held in memory: the zip is written to the socket as it
 * is made (archive.ts), at the pace the receiver reads it.
 *
 * Only the token's hash is in the pod's arguments, so whoever reads the pod's spec (the API server,
 * an admin) learns nothing that opens it; the token itself lives in the caller's memory. A wrong or
 * missing token is refused without using up the one transfer (the NetworkPolicy lets only the
 * user-manager reach the port, and the token is 256 random bits); the first right one takes it.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Writable } from "node:stream";

/** The one path served; anything else is a 404. */
export const ARCHIVE_PATH = "/archive.zip";

export interface ServeOptions<T> {
  /**
   * Writes the zip to the one caller (a folder zipped as it is read, or a class's zip as it was
   * written) and resolves with its summary. An error before the first byte is answered with its
   * message (413 for a limit, else 422).
   */
  produce: (output: Writable) => Promise<T>;
  host: string;
  port: number;
  /** Hex SHA-256 of the bearer token the one caller presents. */
  tokenSha256: string;
  /** Ends with WaitExpiredError when no caller has taken the archive by then. */
  waitMs: number;
  /** Called once the port is open (the pod's readiness probe sees it too). */
  onListening?: (port: number) => void;
}

export class WaitExpiredError extends Error {}

/** The caller went away or the zip failed after its first byte: the transfer is broken. */
export class TransferError extends Error {}

function presented(request: IncomingMessage): Buffer | undefined {
  const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(request.headers.authorization ?? "");
  return match ? createHash("sha256").update(match[1]!).digest() : undefined;
}

function refuse(
  response: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
) {
  response.writeHead(status, { "content-type": "application/json", connection: "close", ...headers });
  response.end(`${JSON.stringify({ error: message })}\n`);
}

/**
 * Serves the archive to the first caller with the right token and resolves with its summary once the
 * last byte was handed to the socket; rejects when the folder is refused or over a limit (the caller
 * got a 4xx/5xx with the message), the transfer broke, or nobody came within `waitMs`.
 */
export async function serveArchiveOnce<T>(options: ServeOptions<T>): Promise<T> {
  const expected = Buffer.from(options.tokenSha256, "hex");
  let taken = false;
  let settle!: { resolve: (s: T) => void; reject: (e: unknown) => void };
  const done = new Promise<T>((resolve, reject) => {
    settle = { resolve, reject };
  });

  const server = createServer((request, response) => {
    if (request.url !== ARCHIVE_PATH) return refuse(response, 404, "not found");
    if (request.method !== "GET") return refuse(response, 405, "only GET", { allow: "GET" });
    const hash = presented(request);
    if (!hash || !timingSafeEqual(hash, expected))
      return refuse(response, 401, "a valid bearer token is required", { "www-authenticate": "Bearer" });
    if (taken) return refuse(response, 410, "the archive has been served already");
    taken = true;
    clearTimeout(wait);
    // Headers go out with the first byte of the zip: a folder refused or over a limit (found before
    // any byte is written) can still be answered with its message.
    response.statusCode = 200;
    response.setHeader("content-type", "application/zip");
    response.setHeader("cache-control", "no-store");
    response.setHeader("connection", "close");
    let closedEarly = false;
    response.once("close", () => {
      if (!response.writableFinished) closedEarly = true;
    });
    options.produce(response).then(
      (summary) => settle.resolve(summary),
      (error: unknown) => {
        if (!response.headersSent && !response.destroyed) {
          const status = (error as Error).name === "LimitError" ? 413 : 422;
          refuse(response, status, (error as Error).message);
          settle.reject(error);
        } else {
          response.destroy();
          settle.reject(
            closedEarly
              ? new TransferError(`the receiver closed the connection before the end of the zip`)
              : error,
          );
        }
      },
    );
  });
  // The zip is written at the receiver's pace: no timeout may cut a slow download.
  server.requestTimeout = 0;
  server.headersTimeout = 10_000;

  const wait = setTimeout(
    () =>
      settle.reject(
        new WaitExpiredError(`nobody fetched the archive within ${Math.round(options.waitMs / 1000)} s`),
      ),
    options.waitMs,
  );
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  options.onListening?.((server.address() as AddressInfo).port);
  try {
    return await done;
  } finally {
    clearTimeout(wait);
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      // Refusals ask to close; the one transfer closes its own connection once written.
      server.closeIdleConnections();
    });
  }
}
