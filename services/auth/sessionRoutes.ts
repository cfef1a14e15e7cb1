/**
 * Endpoints that read the session: /whoami for scripts and pages, /forward-auth for ingress
 * controllers (nginx auth_request, Traefik ForwardAuth), and the public keys.
 */
import type { FastifyRequest } from "fastify";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import Type from "typebox";
import { requestSessions } from "../../lib/requestSessions.ts";
import type { Session } from "../../lib/session.ts";
import { endpoint, type AuthContext } from "./context.ts";
import { checkRedirect } from "./redirects.ts";

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** Where the user was going, from the headers ingress controllers add to the auth subrequest. */
function originalUrl(request: FastifyRequest): string | undefined {
  const host = header(request, "x-forwarded-host");
  if (host) {
    const proto = header(request, "x-forwarded-proto") ?? "https";
    const uri = header(request, "x-forwarded-uri") ?? "/";
    return `${proto.split(",")[0]?.trim()}://${host.split(",")[0]?.trim()}${uri}`;
  }
  return header(request, "x-original-url");
}

const STARTING = "starting: try again in a few seconds";

export const sessionRoutes: FastifyPluginCallbackTypebox<{ ctx: AuthContext }> = (app, { ctx }, done) => {
  const { config, metrics } = ctx;
  // The proxy's rule (lib/requestSessions.ts): every session cookie is checked, and valid ones of
  // different users are no session; the first one never wins (a planted one comes first).
  const verified = requestSessions(ctx.verifier);
  const { endedSessions } = ctx;
  /**
   * The request's session unless it was ended before its expiry (api/sessions.ts, as the proxy
   * checks it); "starting" until the Userlands cache holds its first list, so a restart never lets
   * an ended session through.
   */
  const sessionOf = async (request: FastifyRequest): Promise<Session | undefined | "starting"> => {
    const { session } = await verified.fromRequest(request.raw);
    if (!session || !endedSessions) return session;
    if (!endedSessions.synced()) return "starting";
    return endedSessions.ended(session) ? undefined : session;
  };

  app.get(
    "/whoami",
    {
      schema: {
        response: {
          200: Type.Object({
            user: Type.String(),
            groups: Type.Array(Type.String()),
            expiresAt: Type.String({ format: "date-time" }),
          }),
          401: Type.Object({ error: Type.String() }),
          503: Type.Object({ error: Type.String() }),
        },
      },
    },
    async (request, reply) => {
      const session = await sessionOf(request);
      if (session === "starting") return reply.code(503).send({ error: STARTING });
      if (!session) return reply.code(401).send({ error: "not signed in" });
      return {
        user: session.user,
        groups: session.groups,
        expiresAt: new Date(session.exp * 1000).toISOString(),
      };
    },
  );

  app.get(
    "/forward-auth",
    {
      schema: {
        querystring: Type.Object({
          redirect: Type.Optional(
            Type.Boolean({ description: "answer 302 to the login page instead of 401 (Traefik)" }),
          ),
        }),
      },
    },
    async (request, reply) => {
      const session = await sessionOf(request);
      if (session === "starting") {
        metrics.forwardAuth.inc({ result: "denied" });
        return reply.code(503).header("retry-after", "5").send({ error: STARTING });
      }
      if (session) {
        metrics.forwardAuth.inc({ result: "allowed" });
        // X-Auth-Request-User is what oauth2-proxy sets, so the original ESC proxy also works.
        return reply
          .code(200)
          .header("x-user", session.user)
          .header("x-auth-request-user", session.user)
          .send();
      }
      metrics.forwardAuth.inc({ result: "denied" });
      const login = endpoint(config, "login");
      const target = checkRedirect(originalUrl(request), config.redirects);
      if (target) login.searchParams.set("rd", target.href);
      reply.header("x-auth-login-url", login.href);
      if (request.query.redirect) return reply.redirect(login.href, 302);
      return reply.code(401).send({ error: "not signed in", login: login.href });
    },
  );

  app.get("/.well-known/jwks.json", async (_request, reply) => {
    // Public keys only; short caching so a rotation is picked up soon.
    return reply.header("cache-control", "public, max-age=300").send(ctx.jwks);
  });
  done();
};
