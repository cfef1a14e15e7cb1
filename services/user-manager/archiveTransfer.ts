/**
 * One download through an archive pod (docs/decisions/0011-coursework.md, "Downloads"): write an
 * Archive naming what to archive and the SHA-256 of a fresh random token, wait until the operator
 * reports the pod listening, dial it with the token and hand back its answer as a stream (never
 * read into memory here: the route pipes it to the browser). The Archive is deleted once the
 * transfer ends, whichever way; its pod goes with it. An upload ("Uploads") is the same with a
 * `target`: its files are streamed into the pod one request each, then committed.
 */
import { createHash, randomBytes } from "node:crypto";
import { request, type IncomingMessage } from "node:http";
import type { Readable } from "node:stream";
import type { UploadSummary } from "../../api/copyPrograms.ts";
import { setTimeout as sleep } from "node:timers/promises";
import { API_VERSION, archivesPath, type Archive, type ArchiveSpec } from "../../api/v1alpha1/index.ts";
import { isNotFound, type KubeRest } from "../../lib/kubeRest.ts";
import { HttpError } from "./errors.ts";

type UploadTarget = NonNullable<ArchiveSpec["target"]>;

/** How long the pod may take to start (an image already on the node: seconds). */
const START_TIMEOUT_MS = 120_000;
/** Status is read this often while waiting: a download starts once, so a short poll costs little. */
const POLL_MS = 250;
/** The program listens within a second of its container starting; until then it refuses. */
const CONNECT_TIMEOUT_MS = 10_000;

export interface Transfer {
  /** The pod's answer: a zip, 200. */
  body: IncomingMessage;
  /** The Archive's name, for the log. */
  archive: string;
  /** Deletes the Archive (and so its pod). */
  cleanUp(): Promise<void>;
}

/**
 * Where to dial a transfer pod that listens at podIP:port: itself (in the cluster, as the chart
 * runs the service), or a relay a test made into a node the test process has no route into.
 */
export type ReachPod = (podIP: string, port: number) => Promise<{ host: string; port: number }>;

export class ArchiveTransfers {
  private readonly rest: KubeRest;
  private readonly reach: ReachPod;

  constructor(rest: KubeRest, reach: ReachPod = (host, port) => Promise.resolve({ host, port })) {
    this.rest = rest;
    this.reach = reach;
  }

  /** Writes the Archive with a fresh token's hash; its name, the token and how to delete it. */
  private async create(
    namespace: string,
    what: Pick<ArchiveSpec, "source" | "target">,
    requestedBy: string,
  ): Promise<{ name: string; token: string; cleanUp: () => Promise<void> }> {
    const token = randomBytes(32).toString("base64url");
    const created = await this.rest.create<Archive>(archivesPath(namespace), {
      apiVersion: API_VERSION,
      kind: "Archive",
      metadata: { generateName: what.target ? "upload-" : "download-" },
      spec: {
        ...what,
        tokenSha256: createHash("sha256").update(token).digest("hex"),
        requestedBy: requestedBy.slice(0, 512),
      },
    });
    const name = created.metadata.name ?? "";
    const cleanUp = async () => {
      try {
        await this.rest.delete(archivesPath(namespace, name));
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    };
    return { name, token, cleanUp };
  }

  /**
   * Starts an upload: the pod receives files until commit. 4xx/5xx HttpError when the target
   * cannot be written (the pod's or the operator's message).
   */
  async upload(namespace: string, target: UploadTarget, requestedBy: string): Promise<UploadSession> {
    const { name, token, cleanUp } = await this.create(namespace, { target }, requestedBy);
    try {
      const where = await this.serving(namespace, name);
      return new UploadSession(name, where, token, cleanUp);
    } catch (error) {
      await cleanUp().catch(() => {});
      throw error;
    }
  }

  /** Starts a transfer; 4xx/5xx HttpError when the source cannot be archived. */
  async start(namespace: string, source: ArchiveSpec["source"], requestedBy: string): Promise<Transfer> {
    const { name, token, cleanUp } = await this.create(namespace, { source }, requestedBy);
    try {
      const where = await this.serving(namespace, name);
      const body = await fetchOnce(where.podIP, where.port, token);
      if (body.statusCode !== 200) throw await refusal(body);
      return { body, archive: name, cleanUp };
    } catch (error) {
      await cleanUp().catch(() => {});
      throw error;
    }
  }

  /** Where the pod listens, once the operator says so; the Archive's own message when it fails. */
  private async serving(namespace: string, name: string): Promise<{ podIP: string; port: number }> {
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const archive = await this.rest.get<Archive>(archivesPath(namespace, name));
      const status = archive.status;
      if (status?.phase === "Serving" && status.podIP && status.port) {
        const { host, port } = await this.reach(status.podIP, status.port);
        return { podIP: host, port };
      }
      if (status?.phase === "Failed" || status?.phase === "Served")
        throw new HttpError(422, "Unprocessable", status.message ?? "the archive could not be made");
      if (Date.now() > deadline)
        throw new HttpError(
          503,
          "Unavailable",
          `the archive did not start within ${START_TIMEOUT_MS / 1000} s${status?.message ? `: ${status.message}` : ""}`,
        );
      await sleep(POLL_MS);
    }
  }
}

/** A pod's JSON answer ({error} or a result), at most 64 KiB of it. */
async function jsonOf(body: IncomingMessage): Promise<Record<string, unknown>> {
  let text = "";
  for await (const chunk of body) text = (text + (chunk as Buffer).toString()).slice(0, 65536);
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === "object" ? (value as Record<string, unknown>) : { error: text };
  } catch {
    return { error: text };
  }
}

/** A pod's 4xx/5xx as the HttpError the route answers: 413 for a limit, 422 for the rest. */
async function refusal(body: IncomingMessage): Promise<HttpError> {
  const { error } = await jsonOf(body);
  const message = typeof error === "string" ? error : `the pod answered ${body.statusCode}`;
  return new HttpError(
    body.statusCode === 413 ? 413 : 422,
    body.statusCode === 413 ? "PayloadTooLarge" : "Unprocessable",
    message,
  );
}

/**
 * One request to a transfer pod with the token; a refused connection is tried again while the
 * program starts. `body` is streamed (backpressure: a slow pod slows the sender).
 */
async function fetchOnce(
  host: string,
  port: number,
  token: string,
  options: { method?: string; path?: string; body?: Readable } = {},
): Promise<IncomingMessage> {
  const deadline = Date.now() + CONNECT_TIMEOUT_MS;
  for (;;) {
    try {
      return await new Promise<IncomingMessage>((resolve, reject) => {
        const req = request({
          host,
          port,
          method: options.method ?? "GET",
          path: options.path ?? "/archive.zip",
          headers: { authorization: `Bearer ${token}` },
          timeout: CONNECT_TIMEOUT_MS,
        });
        req.once("response", resolve).once("error", reject);
        req.once("timeout", () => req.destroy(new Error("the transfer pod did not answer")));
        if (!options.body) return req.end();
        // The pod answers a refusal only after reading the rest of the body: the answer, not a
        // broken pipe, says why. A failing sender (the browser's upload) ends the request.
        options.body.once("error", (error) => req.destroy(error));
        options.body.pipe(req);
      });
    } catch (error) {
      // A body already partly sent cannot be sent again.
      if (
        (error as NodeJS.ErrnoException).code !== "ECONNREFUSED" ||
        Date.now() > deadline ||
        (options.body && options.body.readableDidRead)
      )
        throw error;
      await sleep(POLL_MS);
    }
  }
}

/** An upload under way: files and zips are sent one at a time, then committed. */
export class UploadSession {
  readonly archive: string;
  private readonly where: { podIP: string; port: number };
  private readonly token: string;
  readonly cleanUp: () => Promise<void>;

  constructor(
    archive: string,
    where: { podIP: string; port: number },
    token: string,
    cleanUp: () => Promise<void>,
  ) {
    this.archive = archive;
    this.where = where;
    this.token = token;
    this.cleanUp = cleanUp;
  }

  private async send(method: string, path: string, body?: Readable): Promise<Record<string, unknown>> {
    const answer = await fetchOnce(this.where.podIP, this.where.port, this.token, {
      method,
      path,
      ...(body ? { body } : {}),
    });
    if (answer.statusCode !== 200) throw await refusal(answer);
    return jsonOf(answer);
  }

  /** One file of the upload at `path` (relative, `/`-separated; the pod checks it). */
  async file(path: string, body: Readable): Promise<void> {
    await this.send("PUT", `/file?${new URLSearchParams({ path }).toString()}`, body);
  }

  /** A zip whose files and folders become the upload's; how many files it held. */
  async zip(body: Readable): Promise<number> {
    return Number((await this.send("PUT", "/zip", body)).files ?? 0);
  }

  /** Moves everything into place; the pod ends. */
  async commit(): Promise<UploadSummary> {
    return (await this.send("POST", "/commit")) as unknown as UploadSummary;
  }
}
