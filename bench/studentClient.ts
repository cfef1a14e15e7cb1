/**
 * A student without a browser, for benchmarks: follows the real sign-in (proxy → auth → the OpenID
 * provider's login form → auth's callback → back) with a cookie jar, over relays on 127.0.0.1 in
 * place of DNS (`portFor`), then asks for the environment's page until the IDE itself answers
 * rather than the proxy's starting page. Just enough HTTP for that: no caching, no paths on cookies.
 */
import { request, type IncomingHttpHeaders } from "node:http";

interface Cookie {
  name: string;
  value: string;
  domain: string;
  hostOnly: boolean;
}

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  url: URL;
  /** When the response's headers arrived (performance.now()). */
  firstByteAt: number;
}

/** What a browser went through to reach an environment (see StudentClient.openLikeBrowser). */
export interface BrowserVisit {
  /** The environment's own answer. */
  answer: Answer;
  /** The proxy's pages shown before it, in order: their status and when they arrived. */
  pages: { status: number; at: number; starting: boolean }[];
  /** When the starting page's poll first said the environment is no longer starting, if it was shown. */
  proxyReadyAt: number | undefined;
}

/** A student left on a page with nothing to follow (an error page), with every page they saw. */
export class StrandedError extends Error {
  readonly pages: BrowserVisit["pages"];
  constructor(message: string, pages: BrowserVisit["pages"]) {
    super(message);
    this.name = "StrandedError";
    this.pages = pages;
  }
}

export class StudentClient {
  private cookies: Cookie[] = [];
  /** Requests that failed while waiting for the environment (and were asked again). */
  readonly networkErrors: string[] = [];
  private readonly portFor: (url: URL) => number | undefined;

  constructor(portFor: (url: URL) => number | undefined) {
    this.portFor = portFor;
  }

  /** One request, no redirects followed. */
  send(
    url: URL,
    opts: { method?: string; form?: Record<string, string>; accept?: string } = {},
  ): Promise<Answer> {
    const port = this.portFor(url);
    if (port === undefined) return Promise.reject(new Error(`no relay for ${url.host}`));
    const body = opts.form ? new URLSearchParams(opts.form).toString() : undefined;
    const cookie = this.cookies
      .filter((c) =>
        c.hostOnly
          ? url.hostname === c.domain
          : url.hostname === c.domain || url.hostname.endsWith(`.${c.domain}`),
      )
      .map((c) => `${c.name}=${c.value}`)
      .join("; ");
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: "127.0.0.1",
          port,
          method: opts.method ?? "GET",
          path: `${url.pathname}${url.search}`,
          headers: {
            host: url.host,
            accept: opts.accept ?? "text/html",
            ...(cookie ? { cookie } : {}),
            ...(body
              ? {
                  "content-type": "application/x-www-form-urlencoded",
                  "content-length": Buffer.byteLength(body),
                }
              : {}),
          },
          timeout: 60_000,
        },
        (res) => {
          const firstByteAt = performance.now();
          this.remember(url, res.headers["set-cookie"] ?? []);
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks).toString(),
              url,
              firstByteAt,
            }),
          );
          res.on("error", reject);
        },
      );
      req.on("timeout", () => req.destroy(new Error(`${url.href}: no answer in 60 s`)));
      req.on("error", (error) =>
        reject(new Error(`${opts.method ?? "GET"} ${url.href}: ${error.message}`, { cause: error })),
      );
      req.end(body);
    });
  }

  /**
   * GET (or the form's POST) and every redirect after it, and every immediate meta refresh (the
   * hops of the sign-in's clearing chain, as a browser follows them); returns the last answer.
   */
  async follow(
    url: URL,
    opts: { method?: string; form?: Record<string, string>; accept?: string } = {},
  ): Promise<Answer> {
    let answer = await this.send(url, opts);
    for (let hops = 0; ; hops++) {
      const next =
        answer.status >= 300 && answer.status < 400
          ? answer.headers.location
          : unescapeAttribute(/<meta http-equiv="refresh" content="0;url=([^"]+)"/.exec(answer.body)?.[1]);
      if (!next) return answer;
      if (hops > 50) throw new Error(`${url.href}: more than 50 redirects and refreshes`);
      answer = await this.send(new URL(next, answer.url), { accept: opts.accept });
    }
  }

  /** Signs in as `name` starting from `start` (a Template's URL); returns the page it lands on. */
  async signIn(start: URL, name: string): Promise<Answer> {
    const login = await this.follow(start);
    const action = /<form method="post" action="([^"]+)"/.exec(login.body)?.[1];
    if (!action)
      throw new Error(`no login form at ${login.url.href} (${login.status}): ${login.body.slice(0, 200)}`);
    return this.follow(new URL(action.replaceAll("&amp;", "&"), login.url), {
      method: "POST",
      form: { name },
    });
  }

  /**
   * Asks for `url` until the environment itself answers (anything but the proxy's own JSON page,
   * `{"state": ...}`); returns that answer, whose firstByteAt is the IDE's first byte.
   */
  async untilEnvironmentAnswers(url: URL, timeoutMs: number): Promise<Answer> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      // Like the starting page's own polling, a failed request is just asked again.
      const answer = await this.send(url, { accept: "application/json" }).catch((error: unknown) => {
        this.networkErrors.push((error as Error).message);
        return undefined;
      });
      if (answer && !isProxyPage(answer)) return answer;
      if (performance.now() > deadline)
        throw new Error(
          `${url.href}: still ${answer?.body.slice(0, 120) ?? "no answer"} after ${timeoutMs} ms`,
        );
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /**
   * Opens `url` as a browser does and does what the proxy's pages tell a browser to do until
   * `isEnvironment` accepts an answer: the starting page's script polls /_userland/status every
   * second (doubling to 10 s after a failed poll) and reloads once the state is no longer
   * "starting"; the other pages reload by their meta refresh (missing: 5 s, unreachable: 10 s).
   * So the time measured includes the waits a student's browser really has.
   */
  async openLikeBrowser(
    url: URL,
    isEnvironment: (answer: Answer) => boolean,
    timeoutMs: number,
    /** The page the browser is on already (e.g. where the sign-in landed), acted on first. */
    landed?: Answer,
  ): Promise<BrowserVisit> {
    const deadline = performance.now() + timeoutMs;
    const pages: BrowserVisit["pages"] = [];
    let proxyReadyAt: number | undefined;
    const wait = (ms: number) => {
      if (performance.now() + ms > deadline)
        throw new Error(`${url.href}: no environment after ${timeoutMs} ms (${JSON.stringify(pages)})`);
      return new Promise((r) => setTimeout(r, ms));
    };
    for (let next = landed; ; next = undefined) {
      const page =
        next ??
        (await this.send(url).catch((error: unknown) => {
          this.networkErrors.push((error as Error).message);
          return undefined;
        }));
      if (page && isEnvironment(page)) return { answer: page, pages, proxyReadyAt };
      if (!page) {
        await wait(1000);
        continue;
      }
      const starting = page.body.includes('fetch("/_userland/status"');
      pages.push({ status: page.status, at: page.firstByteAt, starting });
      if (starting) {
        // The starting page's script, step by step.
        let delay = 1000;
        for (;;) {
          await wait(delay);
          const status = await this.send(new URL("/_userland/status", url), { accept: "application/json" })
            .then((a) => (JSON.parse(a.body) as { state?: string }).state)
            .catch(() => undefined);
          if (status === undefined) delay = Math.min(delay * 2, 10_000);
          else if (status !== "starting") break;
          else delay = 1000;
        }
        proxyReadyAt ??= performance.now();
        continue;
      }
      const refresh = /<meta http-equiv="refresh" content="(\d+)"/.exec(page.body)?.[1];
      if (refresh === undefined)
        throw new StrandedError(
          `${url.href}: ${page.status} page with nothing to follow: ${page.body.slice(0, 200)}`,
          pages,
        );
      await wait(Number(refresh) * 1000);
    }
  }

  private remember(url: URL, setCookies: string[]): void {
    for (const line of setCookies) {
      const [pair = "", ...attributes] = line.split(";").map((s) => s.trim());
      const eq = pair.indexOf("=");
      if (eq <= 0) continue;
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      const attr = (key: string) =>
        attributes.find((a) => a.toLowerCase().startsWith(`${key}=`))?.slice(key.length + 1);
      const domain = attr("domain")?.replace(/^\./, "").toLowerCase();
      const expired =
        attr("max-age") === "0" || (attr("expires") && Date.parse(attr("expires") ?? "") < Date.now());
      this.cookies = this.cookies.filter((c) => !(c.name === name && c.domain === (domain ?? url.hostname)));
      if (!expired) this.cookies.push({ name, value, domain: domain ?? url.hostname, hostOnly: !domain });
    }
  }
}

function isProxyPage(answer: Answer): boolean {
  if (!String(answer.headers["content-type"] ?? "").startsWith("application/json")) return false;
  try {
    return typeof (JSON.parse(answer.body) as { state?: unknown }).state === "string";
  } catch {
    return false;
  }
}

/** An HTML attribute's text as written by lib/html.ts (numeric entities) or others (`&amp;`). */
function unescapeAttribute(value: string | undefined): string | undefined {
  return value
    ?.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)))
    .replaceAll("&amp;", "&");
}
