/**
 * The forms the proxy's own pages post (the home's Start, Stop, Create, Hand in, Sign out and a
 * visit's Allow): their small bodies, and the rule that only this site's pages may send them.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { formFromOwnSite } from "../../../lib/formOrigin.ts";
import type { RequestRecord } from "../requestLog.ts";
import { originAllowed, type ClientInfo } from "../forward/headers.ts";
import { simplePage } from "../pages/environmentPages.ts";
import { sendPage } from "../pages/send.ts";

export class FormTooLarge extends Error {}

/** A form body of at most `limit` bytes; beyond it, FormTooLarge (the rest is never read). */
export async function readForm(req: IncomingMessage, limit = 4096): Promise<URLSearchParams> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new FormTooLarge("form too large");
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}

/**
 * Answers 403 to a form another site sent (another Template's environment included: it must not act
 * for the student) and says so; true when the form may be read.
 */
export function formFromThisSite(
  req: IncomingMessage,
  res: ServerResponse,
  client: ClientInfo,
  allowedOrigins: readonly string[],
  record: RequestRecord,
): boolean {
  if (formFromOwnSite(req.headers, (origin) => originAllowed(origin, client, allowedOrigins))) return true;
  record.outcome = "forbidden_origin";
  sendPage(req, res, simplePage(403, "Not allowed", "This form must be sent from this site."));
  return false;
}
