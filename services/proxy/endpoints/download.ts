/**
 * `GET /_userland/download?template=<name>`: the signed-in student's own home volume of that
 * Template as a zip (docs/decisions/0011-coursework.md, "Downloads"), through the user-manager with
 * the proxy's token (its userlands/archive right), as Start goes. The proxy names only the session's
 * user, and only a Template they hold a Userland of; the zip is piped through with backpressure.
 * A link another site embeds would start an archive pod for the student: cross-site requests are
 * refused, and one download per student runs at a time.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { pipeline } from "node:stream/promises";
import { simplePage } from "../pages/environmentPages.ts";
import type { Coursework } from "./coursework.ts";
import type { RequestRecord } from "../requestLog.ts";
import { sendPage } from "../pages/send.ts";
import type { ClusterView } from "../route/userlandIndex.ts";

/** What a download needs of the proxy (endpoints/studentEndpoints.ts passes its own dependencies). */
interface DownloadDeps {
  cluster: Pick<ClusterView, "findUserland">;
  coursework: Pick<Coursework, "download">;
}

export async function serveDownload(
  deps: DownloadDeps,
  req: IncomingMessage,
  res: ServerResponse,
  user: string,
  record: RequestRecord,
): Promise<void> {
  if (req.headers["sec-fetch-site"] === "cross-site") {
    record.outcome = "forbidden_origin";
    sendPage(req, res, simplePage(403, "Not allowed", "Downloads start from your home page."));
    return;
  }
  const template = new URL(req.url ?? "/", "http://proxy.invalid").searchParams.get("template") ?? "";
  const userland = template ? deps.cluster.findUserland(user, template) : undefined;
  if (!userland || userland.spec.user !== user) {
    sendPage(req, res, simplePage(404, "Not found", "You have no environment of that kind."));
    return;
  }
  const started = await deps.coursework.download(user, template);
  if (started === "busy") {
    sendPage(
      req,
      res,
      simplePage(
        429,
        "A download is running",
        "Your previous download is still running: let it finish first.",
      ),
    );
    return;
  }
  if ("error" in started) {
    sendPage(
      req,
      res,
      started.error === 413
        ? simplePage(
            413,
            "Too much to download",
            "Your folder is over the download limits: remove what you do not need (caches, downloaded data) and try again.",
          )
        : simplePage(
            502,
            "Could not download your work",
            "The platform could not make the archive. Try again in a minute.",
          ),
    );
    return;
  }
  const { download, done } = started;
  res.writeHead(200, {
    "content-type": "application/zip",
    "content-disposition": download.disposition,
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
  });
  try {
    await pipeline(download.body, res);
  } catch {
    // The student left, or the archive pod's stream broke: end both sides.
    download.abort();
    res.destroy();
  } finally {
    done();
  }
}
