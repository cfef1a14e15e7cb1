/**
 * The browser login flow: /login, the provider callbacks, /logout and the landing page.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import Type from "typebox";
import * as client from "openid-client";
import { SESSION_COOKIE, sessionGroups } from "../../lib/session.ts";
import { cookieValues } from "../../lib/requestSessions.ts";

/** Set by sign-out: the next OpenID Connect login sends prompt=login, so a shared computer is really signed out. */
export const SIGNED_OUT_COOKIE = "userland_signed_out";
import { decideGitHub, decideOidc, groupsOf } from "./allowlist.ts";
import {
  endpoint,
  hostPrefixedTransactions,
  sessionCookieOptions,
  transactionCookieOptions,
  type AuthContext,
} from "./context.ts";
import { GitHubError } from "./github.ts";
import type { Outcome } from "./identity.ts";
import type { Provider } from "./metrics.ts";
import { describeOidcError } from "./oidc.ts";
import {
  browserOnlySignOutPage,
  chooserPage,
  landingPage,
  logoutPage,
  messagePage,
  switchUserPage,
} from "./pages.ts";
import { safeRedirect } from "./redirects.ts";
import { transactionCookieName, type LoginTransaction } from "./transaction.ts";

const ReturnTo = Type.String({ maxLength: 4096 });

/** The first hop of the proxy's clearing chain (`/_userland/signed-out`), which ends at `back`. */
function clearingChain(clearSiteUrl: URL, back: URL): string {
  const first = new URL(clearSiteUrl);
  first.searchParams.set("rd", back.href);
  return first.href;
}

export function sendPage(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).type("text/html; charset=utf-8").send(body);
}

export const loginRoutes: FastifyPluginCallbackTypebox<{ ctx: AuthContext }> = (app, { ctx }, done) => {
  const { config, metrics, log } = ctx;
  const providers: Provider[] = [
    ...(ctx.oidc ? ["oidc" as const] : []),
    ...(ctx.github ? ["github" as const] : []),
  ];
  const labels: Record<Provider, string> = {
    oidc: config.oidc?.displayName ?? "Single sign-on",
    github: "GitHub",
  };

  const loginUrl = (returnTo: string, provider?: Provider): string => {
    const url = endpoint(config, "login");
    url.searchParams.set("rd", returnTo);
    if (provider) url.searchParams.set("provider", provider);
    return url.href;
  };

  // Bad query strings reach people, not programs: answer with a page, not JSON.
  app.setErrorHandler(
    (error: { statusCode?: number; validation?: unknown; message: string }, request, reply) => {
      if (error.validation) return sendPage(reply, 400, messagePage("Bad request", error.message));
      const status = error.statusCode ?? 500;
      if (status >= 400 && status < 500)
        return sendPage(reply, status, messagePage("Bad request", error.message));
      log.error({ err: error, path: request.routeOptions.url }, "login flow failed");
      return sendPage(
        reply,
        500,
        messagePage("Something went wrong", "Signing in failed unexpectedly. Please try again."),
      );
    },
  );

  async function currentSession(request: FastifyRequest) {
    return ctx.verifier.verify(request.cookies[SESSION_COOKIE]);
  }

  app.get(
    "/login",
    {
      schema: {
        querystring: Type.Object({
          rd: Type.Optional(ReturnTo),
          provider: Type.Optional(Type.Union([Type.Literal("oidc"), Type.Literal("github")])),
          /** Set by the clearing chain's last hop: the Template hosts are clear, start now. */
          cleared: Type.Optional(Type.Literal("1")),
          /** Carried through the chain (which clears cookies): the browser had signed out. */
          fresh: Type.Optional(Type.Literal("1")),
        }),
      },
    },
    async (request, reply) => {
      const returnTo = safeRedirect(request.query.rd, config.redirects);
      if (await currentSession(request)) return reply.redirect(returnTo, 302);
      const wanted = request.query.provider;
      if (wanted && !providers.includes(wanted)) {
        return sendPage(
          reply,
          400,
          messagePage("Unknown sign-in method", `Signing in with ${wanted} is not enabled here.`, {
            href: loginUrl(returnTo),
            label: "Sign in",
          }),
        );
      }
      const provider = wanted ?? (providers.length === 1 ? providers[0] : undefined);
      if (!provider)
        return sendPage(
          reply,
          200,
          chooserPage(providers.map((p) => ({ href: loginUrl(returnTo, p), label: labels[p] }))),
        );
      // After a sign-out, the provider must ask for credentials again instead of reusing its own session.
      const signedOut = request.cookies[SIGNED_OUT_COOKIE] !== undefined || request.query.fresh === "1";
      if (config.clearSiteUrl && request.query.cleared === undefined) {
        // Before a new session exists, every Template host drops what an environment left behind
        // in this browser (service workers, storage, cookies planted with other paths).
        const back = new URL(loginUrl(returnTo, provider));
        back.searchParams.set("cleared", "1");
        if (signedOut) back.searchParams.set("fresh", "1");
        return reply.redirect(clearingChain(config.clearSiteUrl, back), 303);
      }
      // The chain cleared the mark with every other cookie: set it again until a login succeeds,
      // or a sign-in abandoned at the provider would let the next one reuse the provider's session.
      if (signedOut && config.clearSiteUrl)
        reply.setCookie(SIGNED_OUT_COOKIE, "1", sessionCookieOptions(config, config.sessionTtlSeconds));
      return start(reply, provider, returnTo, signedOut);
    },
  );

  async function start(reply: FastifyReply, provider: Provider, returnTo: string, forceLogin: boolean) {
    const tx: LoginTransaction = {
      provider,
      state: client.randomState(),
      verifier: client.randomPKCECodeVerifier(),
      returnTo,
    };
    let target: URL;
    if (provider === "oidc" && ctx.oidc) {
      tx.nonce = client.randomNonce();
      try {
        target = await ctx.oidc.authorizationUrl({
          state: tx.state,
          nonce: tx.nonce,
          verifier: tx.verifier,
          forceLogin,
        });
      } catch (error) {
        log.error({ err: error }, "OpenID Connect provider unreachable");
        return sendPage(
          reply,
          503,
          messagePage(
            "Sign-in unavailable",
            "The identity provider cannot be reached right now. Please try again in a minute.",
            { href: loginUrl(returnTo, provider), label: "Try again" },
          ),
        );
      }
    } else if (provider === "github" && ctx.github) {
      target = ctx.github.authorizationUrl({
        state: tx.state,
        codeChallenge: await client.calculatePKCECodeChallenge(tx.verifier),
      });
    } else {
      throw new Error(`provider ${provider} is not configured`);
    }
    const name = transactionCookieName(tx.state, hostPrefixedTransactions(config)) as string;
    reply.setCookie(
      name,
      await ctx.transactions.seal(tx),
      transactionCookieOptions(config, config.loginTimeoutSeconds),
    );
    metrics.loginsStarted.inc({ provider });
    return reply.redirect(target.href, 302);
  }

  /** The transaction this callback belongs to (its cookie is cleared: a transaction is used once). */
  async function takeTransaction(
    request: FastifyRequest,
    reply: FastifyReply,
    provider: Provider,
    query: URLSearchParams,
  ) {
    const state = query.get("state");
    // On https only the __Host- name, which no other host can set: a transaction planted by a
    // sibling host (cookie tossing) is not one this browser's sign-in page started.
    const name = transactionCookieName(state, hostPrefixedTransactions(config));
    if (!name) return undefined;
    const token = request.cookies[name];
    if (token !== undefined) reply.clearCookie(name, transactionCookieOptions(config));
    // Two of that name: one was planted beside this browser's own (another path or domain).
    if (cookieValues(request.headers.cookie, name).length !== 1) return undefined;
    const tx = await ctx.transactions.open(token);
    return tx && tx.state === state && tx.provider === provider ? tx : undefined;
  }

  function staleLogin(reply: FastifyReply, provider: Provider) {
    metrics.logins.inc({ provider, result: "error" });
    return sendPage(
      reply,
      400,
      messagePage(
        "Sign-in link expired",
        "This sign-in response does not belong to a sign-in started in this browser: it has expired, was already used, or was started elsewhere. Please start again.",
        { href: loginUrl(config.redirects.defaultRedirect, provider), label: "Sign in again" },
      ),
    );
  }

  function failed(
    reply: FastifyReply,
    provider: Provider,
    tx: LoginTransaction,
    detail: string,
    error?: unknown,
  ) {
    metrics.logins.inc({ provider, result: "error" });
    log.warn({ provider, err: error, detail }, "login failed");
    return sendPage(
      reply,
      400,
      messagePage("Sign-in failed", `Signing in did not work: ${detail}. Please start again.`, {
        href: loginUrl(tx.returnTo, provider),
        label: "Sign in again",
      }),
    );
  }

  async function finish(
    reply: FastifyReply,
    provider: Provider,
    tx: LoginTransaction,
    decision: Outcome<string>,
    subject: string,
    claimedGroups: readonly string[] = [],
  ) {
    if (!decision.ok) {
      metrics.logins.inc({ provider, result: "refused" });
      log.info({ provider, subject, reason: decision.reason }, "login refused");
      return sendPage(reply, 403, messagePage("Access denied", decision.reason));
    }
    const user = decision.value;
    // Never silently replace another user's valid session: a sign-in planted by someone else
    // (login CSRF) would have the student work, and type secrets, in that person's environment.
    const current = await currentSession(reply.request);
    if (current && current.user !== user) {
      metrics.logins.inc({ provider, result: "refused" });
      log.warn({ provider, user, signedIn: current.user }, "sign-in over another user's session: asked");
      const again = loginUrl(tx.returnTo, provider);
      return sendPage(
        reply,
        409,
        switchUserPage(current.user, user, {
          stay: tx.returnTo,
          logout: endpoint(config, "logout").href,
          signInAgain: again,
        }),
      );
    }
    // The groups travel in the session so the user-manager's console can ask RBAC about them.
    const { groups, dropped } = sessionGroups(claimedGroups);
    if (dropped.length > 0)
      log.warn(
        { provider, user, dropped: dropped.slice(0, 20), count: dropped.length },
        "groups left out of the session: invalid names, or more than a session cookie holds (have the identity provider send fewer)",
      );
    const token = await ctx.signer.sign(user, config.sessionTtlSeconds, groups);
    reply.setCookie(SESSION_COOKIE, token, sessionCookieOptions(config, config.sessionTtlSeconds));
    reply.clearCookie(SIGNED_OUT_COOKIE, sessionCookieOptions(config));
    metrics.logins.inc({ provider, result: "success" });
    log.info({ provider, user }, "login");
    // Awaited (with its own timeout) so the user's environment exists by the time they arrive,
    // and what the platform decides by their groups (do they teach?) holds from their first page.
    if (ctx.groupsReport) await ctx.groupsReport.report(token, user);
    if (ctx.provisioner) await ctx.provisioner.provision(user, tx.returnTo);
    return reply.redirect(tx.returnTo, 302);
  }

  /**
   * A provider's callback: 404 (`off` says why) while the provider is not configured; else the
   * sign-in transaction the callback's state names, or the expired-link page, and `complete`
   * finishes the sign-in with the provider's answer.
   */
  function callbackRoute<Client, Rules>(
    provider: Provider,
    off: string,
    client: Client | undefined,
    rules: Rules | undefined,
    complete: (
      reply: FastifyReply,
      client: Client,
      rules: Rules,
      query: URLSearchParams,
      tx: LoginTransaction,
    ) => Promise<unknown>,
  ): void {
    app.get(`/callback/${provider}`, async (request, reply) => {
      if (!client || !rules) return sendPage(reply, 404, messagePage("Not found", off));
      const raw = request.raw.url ?? "";
      const q = raw.indexOf("?");
      const query = new URLSearchParams(q >= 0 ? raw.slice(q + 1) : "");
      const tx = await takeTransaction(request, reply, provider, query);
      if (!tx) return staleLogin(reply, provider);
      return complete(reply, client, rules, query, tx);
    });
  }

  callbackRoute(
    "oidc",
    "OpenID Connect login is not enabled.",
    ctx.oidc,
    config.oidc,
    async (reply, oidc, rules, query, tx) => {
      let claims: Record<string, unknown>;
      try {
        claims = await oidc.finish(query, tx);
      } catch (error) {
        return failed(reply, "oidc", tx, describeOidcError(error), error);
      }
      const groups = groupsOf(claims[rules.groupsClaim]);
      return finish(reply, "oidc", tx, decideOidc(claims, rules, config.allow), String(claims.sub), groups);
    },
  );

  callbackRoute(
    "github",
    "GitHub login is not enabled.",
    ctx.github,
    config.github,
    async (reply, github, rules, query, tx) => {
      const code = query.get("code");
      if (!code) {
        const error = query.get("error") ?? "no authorization code";
        return failed(
          reply,
          "github",
          tx,
          `GitHub answered ${error}${query.get("error_description") ? `: ${query.get("error_description")}` : ""}`,
        );
      }
      let account;
      try {
        account = await github.finish(code, tx.verifier);
      } catch (error) {
        const detail = error instanceof GitHubError ? error.message : "GitHub could not be reached";
        return failed(reply, "github", tx, detail, error);
      }
      return finish(reply, "github", tx, decideGitHub(account, rules, config.allow), account.login);
    },
  );

  app.get(
    "/logout",
    { schema: { querystring: Type.Object({ rd: Type.Optional(ReturnTo) }) } },
    async (request, reply) => {
      const session = await currentSession(request);
      const rd =
        request.query.rd === undefined ? undefined : safeRedirect(request.query.rd, config.redirects);
      return sendPage(reply, 200, logoutPage(endpoint(config, "logout").href, rd, session?.user));
    },
  );

  app.post("/logout", async (request, reply) => {
    const token = request.cookies[SESSION_COOKIE];
    const session = await ctx.verifier.verify(token);
    // Everywhere first (AUTH_SIGN_OUT_URL): a copy of the cookie must stop working, not only this
    // browser's. Unset: this browser only, as before.
    const ended =
      session && token && ctx.signOut ? await ctx.signOut.endEverywhere(token, session.user) : undefined;
    if (session && !ctx.signOut) metrics.signOuts.inc({ result: "local" });
    reply.clearCookie(SESSION_COOKIE, sessionCookieOptions(config));
    if (session) log.info({ user: session.user, everywhere: ended ?? "not configured" }, "logout");
    // The body is optional (a bare POST logs out too); safeRedirect accepts only a string rd.
    const rd = safeRedirect((request.body as { rd?: unknown } | null | undefined)?.rd, config.redirects);
    let next = rd;
    if (config.clearSiteUrl) {
      // Through every Template host (each clears its origin), then /signed-out marks the browser:
      // the chain clears cookies, so the mark is set after it.
      const back = endpoint(config, "signed-out");
      back.searchParams.set("rd", rd);
      next = clearingChain(config.clearSiteUrl, back);
    } else reply.setCookie(SIGNED_OUT_COOKIE, "1", sessionCookieOptions(config, config.sessionTtlSeconds));
    // Never a silent half sign-out: the student is told the session still works elsewhere.
    if (session && ended === "browser-only")
      return sendPage(reply, 200, browserOnlySignOutPage(new Date(session.exp * 1000), next));
    return reply.redirect(next, 303);
  });

  // The clearing chain's end after a sign-out. Anyone may link here: it only makes the next
  // OpenID Connect login ask for credentials again.
  app.get(
    "/signed-out",
    { schema: { querystring: Type.Object({ rd: Type.Optional(ReturnTo) }) } },
    async (request, reply) => {
      reply.setCookie(SIGNED_OUT_COOKIE, "1", sessionCookieOptions(config, config.sessionTtlSeconds));
      return reply.redirect(safeRedirect(request.query.rd, config.redirects), 303);
    },
  );

  app.get("/", async (request, reply) => {
    const session = await currentSession(request);
    return sendPage(
      reply,
      200,
      landingPage(session && { user: session.user, expiresAt: new Date(session.exp * 1000).toISOString() }, {
        login: endpoint(config, "login").href,
        logout: endpoint(config, "logout").href,
      }),
    );
  });
  done();
};
