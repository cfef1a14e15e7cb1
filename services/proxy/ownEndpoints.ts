/**
 * The proxy's own endpoints under /_userland/ on every host, for the session's own environment:
 * `GET /_userland/status` (what the starting page polls) and `POST /_userland/start` (the Start
 * button). Never forwarded to an environment.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { formFromOwnSite } from "../../lib/formOrigin.ts";
import { localPath } from "../../lib/localPath.ts";
import { environmentInfo, environmentState, userlandKey } from "./environment.ts";
import { originAllowed } from "./headers.ts";
import { missingPage, simplePage } from "./pages.ts";
import type { RequestRecord } from "./requestLog.ts";
import { prefersJson, sendJson, sendPage } from "./respond.ts";
import type { OwnEndpointRoute } from "./router.ts";
import type { ClusterView } from "./routing.ts";
import type { Starter } from "./starter.ts";

export interface OwnEndpointDeps {
  cluster: ClusterView;
  starter: Starter;
  allowedOrigins: readonly string[];
}

class FormTooLarge extends Error {}

async function readForm(req: IncomingMessage, limit = 4096): Promise<URLSearchParams> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new FormTooLarge("form too large");
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}

export async function serveOwnEndpoint(
  deps: OwnEndpointDeps,
  req: IncomingMessage,
  res: ServerResponse,
  own: OwnEndpointRoute,
  record: RequestRecord,
): Promise<void> {
  const { cluster, starter } = deps;
  const { session, template, client, pathname } = own;
  const userland = cluster.findUserland(session.user, template);
  if (userland) record.userland = userlandKey(userland);
  if (pathname === "/_userland/status" && (req.method === "GET" || req.method === "HEAD")) {
    const state = environmentState(userland);
    sendJson(res, 200, {
      state: state === "stopped" && userland && starter.recentlyRequested(userland) ? "starting" : state,
      template,
      user: session.user,
      phase: userland?.status?.phase ?? (userland ? "Pending" : undefined),
      message: userland?.status?.message ?? "",
    });
    return;
  }
  if (pathname !== "/_userland/start" || req.method !== "POST") {
    sendPage(
      req,
      res,
      simplePage(404, "Not found", "This address belongs to the platform, not to your environment."),
    );
    return;
  }
  // Forms from other sites (another Template's environment included) must not start environments.
  if (!formFromOwnSite(req.headers, (origin) => originAllowed(origin, client, deps.allowedOrigins))) {
    record.outcome = "forbidden_origin";
    sendPage(req, res, simplePage(403, "Not allowed", "This form must be sent from this site."));
    return;
  }
  let form: URLSearchParams;
  try {
    form = await readForm(req);
  } catch (error) {
    sendPage(
      req,
      res,
      error instanceof FormTooLarge
        ? simplePage(413, "Form too large", "This form must be smaller than 4 KiB.")
        : simplePage(400, "Bad request", "The form could not be read."),
    );
    return;
  }
  // The form is the stopped page's, whose rd is always a local path: anything else (another site,
  // characters a Location header cannot carry) was not made by that page.
  const rd = form.get("rd");
  const returnPath = rd === null ? "/" : localPath(rd);
  if (returnPath === undefined) {
    record.outcome = "bad_request";
    sendPage(
      req,
      res,
      simplePage(400, "Bad request", "The form's return address is not a path on this site."),
    );
    return;
  }
  if (!userland || environmentState(userland) === "missing") {
    sendPage(req, res, missingPage(environmentInfo(cluster, template, session.user)));
    return;
  }
  if (environmentState(userland) === "stopped" && !(await starter.request(userland, session.user))) {
    sendPage(
      req,
      res,
      simplePage(
        502,
        "Could not start your environment",
        "The user-management service did not accept the request. Try again in a minute.",
      ),
    );
    return;
  }
  if (prefersJson(req)) {
    sendJson(res, 202, { state: "starting", template });
    return;
  }
  res.writeHead(303, {
    location: returnPath,
    "cache-control": "no-store",
    "content-length": 0,
  });
  res.end();
}
