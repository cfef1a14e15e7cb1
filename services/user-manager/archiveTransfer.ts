/**
 * One download through an archive pod (docs/decisions/0011-coursework.md, "Downloads"): write an
 * Archive naming what to archive and the SHA-256 of a fresh random token, wait until the operator
 * reports the pod listening, dial it with the token and hand back its answer as a stream (never
 * read into memory here: the route pipes it to the browser). The Archive is deleted once the
 * transfer ends, whichever way; its pod goes with it.
 */
import { createHash, randomBytes } from "node:crypto";
import { request, type IncomingMessage } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { API_VERSION, archivesPath, type Archive, type ArchiveSpec } from "../../api/v1alpha1/index.ts";
import { isNotFound, type KubeRest } from "../../lib/kubeRest.ts";
import { HttpError } from "./errors.ts";

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

export class ArchiveTransfers {
  private readonly rest: KubeRest;

  constructor(rest: KubeRest) {
    this.rest = rest;
  }

  /** Starts a transfer; 4xx/5xx HttpError when the source cannot be archived. */
  async start(namespace: string, source: ArchiveSpec["source"], requestedBy: string): Promise<Transfer> {
    const token = randomBytes(32).toString("base64url");
    const created = await this.rest.create<Archive>(archivesPath(namespace), {
      apiVersion: API_VERSION,
      kind: "Archive",
      metadata: { generateName: "download-" },
      spec: {
        source,
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
    try {
      const where = await this.serving(namespace, name);
      const body = await fetchOnce(where.podIP, where.port, token);
      if (body.statusCode !== 200) {
        let text = "";
        for await (const chunk of body) text = (text + (chunk as Buffer).toString()).slice(0, 4096);
        const message = (() => {
          try {
            return String((JSON.parse(text) as { error?: unknown }).error);
          } catch {
            return text;
          }
        })();
        throw new HttpError(
          body.statusCode === 413 ? 413 : 422,
          body.statusCode === 413 ? "PayloadTooLarge" : "Unprocessable",
          message,
        );
      }
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
      if (status?.phase === "Serving" && status.podIP && status.port)
        return { podIP: status.podIP, port: status.port };
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

/** GET /archive.zip with the token; a refused connection is tried again while the program starts. */
async function fetchOnce(host: string, port: number, token: string): Promise<IncomingMessage> {
  const deadline = Date.now() + CONNECT_TIMEOUT_MS;
  for (;;) {
    try {
      return await new Promise<IncomingMessage>((resolve, reject) => {
        const req = request({
          host,
          port,
          path: "/archive.zip",
          headers: { authorization: `Bearer ${token}` },
          timeout: CONNECT_TIMEOUT_MS,
        });
        req.once("response", resolve).once("error", reject);
        req.once("timeout", () => req.destroy(new Error("the archive pod did not answer")));
        req.end();
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ECONNREFUSED" || Date.now() > deadline) throw error;
      await sleep(POLL_MS);
    }
  }
}
