/**
 * `POST /api/v1/userlands/{name}/visits`: the proxy reports a teacher's visit to a student's
 * environment (docs/decisions/0012-visits.md). The user-manager decides whether the visitor may
 * enter and keeps the record:
 *
 * - the caller is the proxy (its own token; it needs `patch` on the Userland, as for Start);
 * - the visitor is proven by their own session token, verified here with the auth service's keys
 *   (the proxy only relays it), and RBAC decides with an access review of `create` on
 *   `userlands/visit` for the session's Kubernetes subject, as the console's other rights; the
 *   environment of one who teaches its Template (course folder and feedback read-write, every
 *   hand-in read-only) needs `create` on `userlands/visit-teacher` besides (issue 41 item 7);
 * - the visit is folded into the Userland's `userland.dev/visits` annotation (api/visits.ts) and
 *   its beginning and end become Events on the Userland and log lines.
 *
 * Ending a visit needs no right: a visit that happened is recorded even after the right is gone.
 */
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import {
  applyVisitReport,
  consentState,
  parseVisitRequests,
  parseVisits,
  VISIT_CONSENT_ANNOTATION,
  visitIsLive,
  visitMinutes,
  withConsent,
  withRequest,
  type Visit,
} from "../../api/visits.ts";
import { Type } from "../../api/v1alpha1/schema.ts";
import { USERLANDS, UserlandAnnotations, type Userland } from "../../api/v1alpha1/index.ts";
import { isConflict, type KubeRest } from "../../lib/kubeRest.ts";
import type { Logger } from "../../lib/logger.ts";
import type { SessionVerifier } from "../../lib/session.ts";
import { EventRecorder, userlandRef } from "../../lib/events.ts";
import type { AccessReviewer } from "./auth/accessReview.ts";
import { sessionCaller, type SessionAuth } from "./auth/sessionCaller.ts";
import type { PersonTeaches } from "./auth/teaches.ts";
import { badRequest, HttpError, notFound } from "./errors.ts";
import { ErrorBody, UserlandNameSchema } from "./schemas.ts";
import type { UserlandStore } from "./store.ts";

/** The RBAC subresource whose `create` lets a person into a student's environment. */
export const VISIT_SUBRESOURCE = "visit";
/** And into the environment of a person who teaches its Template: a right of its own. */
export const VISIT_TEACHER_SUBRESOURCE = "visit-teacher";

export interface VisitRouteOptions {
  store: UserlandStore;
  rest: KubeRest;
  reviewer: AccessReviewer;
  /** Whether the Userland's owner teaches its Template: their environment is not a student's. */
  teaches: PersonTeaches;
  log: Logger;
  /** Session verification and the subjects' prefixes; undefined: the console is off, visits too. */
  sessions: (Pick<SessionAuth, "userPrefix" | "groupPrefix"> & { verifier: SessionVerifier }) | undefined;
  now?: () => Date;
}

const VisitBody = Type.Object(
  {
    session: Type.String({
      minLength: 1,
      maxLength: 8192,
      description: "The visitor's session token (the auth service's cookie value), relayed by the proxy.",
    }),
    phase: Type.Union([Type.Literal("begin"), Type.Literal("continue"), Type.Literal("end")]),
    firstSeen: Type.String({ format: "date-time" }),
    lastSeen: Type.String({ format: "date-time" }),
    quietSeconds: Type.Integer({
      minimum: 1,
      maximum: 86_400,
      description: "The proxy's quiet period: an open visit not seen for longer is over.",
    }),
  },
  { additionalProperties: false },
);

const VisitAnswer = Type.Object({
  owner: Type.String(),
  templateName: Type.String(),
  visitor: Type.String(),
  visit: Type.Union([
    Type.Object({
      visitor: Type.String(),
      from: Type.String(),
      to: Type.String(),
      ended: Type.Optional(Type.Boolean()),
    }),
    Type.Null(),
  ]),
});

/** Writes with the resourceVersion read: a concurrent change (another replica's report) is read again. */
const WRITE_ATTEMPTS = 5;

export const visitRoutes: FastifyPluginCallbackTypebox<VisitRouteOptions> = (app, opts, done) => {
  const { store, reviewer, log } = opts;
  const now = opts.now ?? (() => new Date());
  const events = new EventRecorder(opts.rest, "userland-user-manager", log);

  /**
   * Changes one annotation of the Userland `name` with `change` (undefined: nothing to write),
   * written with the read resourceVersion; a concurrent change is read again.
   */
  async function updateAnnotation<T>(
    name: string,
    key: string,
    change: (userland: Userland) => { value: string | undefined; result: T },
  ): Promise<{ userland: Userland; result: T }> {
    for (let attempt = 1; ; attempt++) {
      const userland = await store.get(name);
      if (!userland) throw notFound(`Userland "${name}" does not exist`);
      const { value, result } = change(userland);
      if (value === undefined) return { userland, result };
      try {
        const written = await store.patch(name, {
          metadata: { resourceVersion: userland.metadata.resourceVersion, annotations: { [key]: value } },
        });
        if (!written) throw notFound(`Userland "${name}" does not exist`);
        return { userland: written, result };
      } catch (error) {
        if (!isConflict(error) || attempt >= WRITE_ATTEMPTS) throw error;
      }
    }
  }

  /**
   * A Template with `userland.dev/visit-consent: required`: a visit begins only once the student
   * allowed this visitor (CONSENT_TTL_MS); until then the request is recorded for their home page
   * and the answer is 409 ConsentRequired (the proxy shows the teacher a waiting page).
   */
  async function requireConsent(userland: Userland, visitor: string, quiet: number): Promise<void> {
    const template = await store.getTemplate(userland.spec.templateName);
    if (template?.metadata.annotations?.[VISIT_CONSENT_ANNOTATION] !== "required") return;
    // A visit already going on (another replica's, or one begun before the Template asked) goes on.
    const quietMs = quiet * 1000;
    if (
      parseVisits(userland.metadata.annotations?.[UserlandAnnotations.visits]).some(
        (v) => v.visitor === visitor && visitIsLive(v, now(), quietMs),
      )
    )
      return;
    const name = userland.metadata.name ?? "";
    const { userland: written, result } = await updateAnnotation(
      name,
      UserlandAnnotations.visitRequests,
      (u) => {
        const requests = parseVisitRequests(u.metadata.annotations?.[UserlandAnnotations.visitRequests]);
        const state = consentState(requests, visitor, now());
        if (state !== "none") return { value: undefined, result: state };
        return {
          value: JSON.stringify(withRequest(requests, visitor, now()).requests),
          result: "asked" as const,
        };
      },
    );
    if (result === "allowed") return;
    if (result === "asked") {
      log.info(
        { visitor, owner: userland.spec.user, userland: name },
        "visit waits for the student's consent",
      );
      events.normal(
        userlandRef(written),
        "VisitRequested",
        `${visitor} asks to open ${userland.spec.user}'s environment`,
      );
    }
    throw new HttpError(
      409,
      "ConsentRequired",
      `${userland.spec.user} must allow the visit first (their home page shows the request)`,
      { extra: { owner: userland.spec.user } },
    );
  }

  app.post(
    "/api/v1/userlands/:name/visit-consents",
    {
      config: { permissions: ["patch"], nameParam: "name" },
      schema: {
        tags: ["userlands"],
        summary: "The student allows a waiting visitor (the proxy, for the home page's Allow)",
        description:
          "The relayed session must be the Userland's owner's. It lets the visitor begin visits for an hour (docs/decisions/0012-visits.md).",
        params: Type.Object({ name: UserlandNameSchema }),
        body: Type.Object(
          {
            session: Type.String({ minLength: 1, maxLength: 8192 }),
            visitor: Type.String({ minLength: 1, maxLength: 256 }),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ owner: Type.String(), visitor: Type.String(), allowedAt: Type.String() }),
          401: ErrorBody,
          403: ErrorBody,
          404: ErrorBody,
          501: ErrorBody,
        },
      },
    },
    async (request) => {
      const { name } = request.params;
      if (!opts.sessions)
        throw new HttpError(501, "NotImplemented", "visits need the console's session keys");
      const session = await opts.sessions.verifier.verify(request.body.session);
      if (!session) throw new HttpError(401, "Unauthorized", "the student's session is not valid");
      const { visitor } = request.body;
      const { userland, result } = await updateAnnotation(name, UserlandAnnotations.visitRequests, (u) => {
        if (u.spec.user !== session.user) return { value: undefined, result: "not-owner" as const };
        const update = withConsent(
          parseVisitRequests(u.metadata.annotations?.[UserlandAnnotations.visitRequests]),
          visitor,
          now(),
        );
        return update.found
          ? { value: JSON.stringify(update.requests), result: "allowed" as const }
          : { value: undefined, result: "none" as const };
      });
      if (result === "not-owner")
        throw new HttpError(403, "Forbidden", "only the environment's own student may allow a visit");
      if (result === "none") throw notFound(`${visitor} is not waiting to open this environment`);
      log.info({ visitor, owner: session.user, userland: name }, "visit allowed by the student");
      events.normal(
        userlandRef(userland),
        "VisitAllowed",
        `${session.user} allowed ${visitor} to open their environment`,
      );
      return { owner: session.user, visitor, allowedAt: now().toISOString() };
    },
  );

  app.post(
    "/api/v1/userlands/:name/visits",
    {
      config: { permissions: ["patch"], nameParam: "name" },
      schema: {
        tags: ["userlands"],
        summary: "Report a visit to a student's environment (the proxy)",
        description:
          "The proxy reports that a signed-in person other than the owner opens a student's environment. The visitor is the relayed session's " +
          "user; RBAC must let them create userlands/visit on this Userland (begin and continue). The visit is kept in the userland.dev/visits " +
          "annotation (at most 50, 30 days) and its beginning and end are Events on the Userland.",
        params: Type.Object({ name: UserlandNameSchema }),
        body: VisitBody,
        response: {
          200: VisitAnswer,
          400: ErrorBody,
          401: ErrorBody,
          403: ErrorBody,
          404: ErrorBody,
          409: ErrorBody,
          501: ErrorBody,
        },
      },
    },
    async (request) => {
      const { name } = request.params;
      const body = request.body;
      if (!opts.sessions)
        throw new HttpError(
          501,
          "NotImplemented",
          "visits need the console's session keys (USER_MANAGER_SESSION_JWKS_URL or USER_MANAGER_SESSION_PUBLIC_KEYS_FILE)",
        );
      const session = await opts.sessions.verifier.verify(body.session);
      if (!session)
        throw new HttpError(401, "Unauthorized", "the visitor's session is not valid", {
          field: "session",
          in: "body",
        });
      let userland = await store.get(name);
      if (!userland) throw notFound(`Userland "${name}" does not exist`);
      if (userland.spec.user === session.user)
        throw badRequest("a student opening their own environment is not a visit", "session");
      const namespace = userland.metadata.namespace ?? "";
      const visitor = sessionCaller(session, opts.sessions);
      if (body.phase !== "end") {
        const owner = userland.spec.user;
        const ownerTeaches = await opts.teaches(owner, userland.spec.templateName, namespace);
        for (const subresource of ownerTeaches
          ? [VISIT_SUBRESOURCE, VISIT_TEACHER_SUBRESOURCE]
          : [VISIT_SUBRESOURCE]) {
          const decision = await reviewer.review(visitor, "create", name, namespace, {
            resource: USERLANDS,
            subresource,
          });
          if (decision.allowed) continue;
          log.info(
            { visitor: session.user, userland: name, namespace, subresource },
            "visit refused by RBAC",
          );
          throw new HttpError(
            403,
            "Forbidden",
            `${visitor.username} may not open the environment of Userland "${name}" in namespace "${namespace}"` +
              (subresource === VISIT_TEACHER_SUBRESOURCE
                ? ` (${owner} teaches Template "${userland.spec.templateName}")`
                : "") +
              `: a Role bound to them must grant verb "create" on "userlands/${subresource}" in API group "userland.dev"`,
          );
        }
      }
      if (body.phase === "begin") await requireConsent(userland, session.user, body.quietSeconds);
      const report = {
        visitor: session.user,
        phase: body.phase,
        firstSeen: new Date(body.firstSeen),
        lastSeen: new Date(body.lastSeen),
        staleMs: body.quietSeconds * 1000,
      };
      let visit: Visit | undefined;
      for (let attempt = 1; ; attempt++) {
        const at = now();
        const update = applyVisitReport(
          parseVisits(userland.metadata.annotations?.[UserlandAnnotations.visits]),
          {
            ...report,
            now: at,
          },
        );
        visit = update.ended ?? update.started ?? update.visits.findLast((v) => v.visitor === session.user);
        if (!update.changed) break;
        try {
          const written: Userland | undefined = await store.patch(name, {
            metadata: {
              resourceVersion: userland.metadata.resourceVersion,
              annotations: { [UserlandAnnotations.visits]: JSON.stringify(update.visits) },
            },
          });
          if (!written) throw notFound(`Userland "${name}" does not exist`);
          if (update.started) {
            log.info(
              { visitor: session.user, owner: userland.spec.user, userland: name, namespace },
              "visit began",
            );
            events.normal(
              userlandRef(written),
              "VisitStarted",
              `${session.user} opened ${userland.spec.user}'s environment`,
            );
          }
          if (update.ended) {
            const minutes = visitMinutes(update.ended);
            log.info(
              { visitor: session.user, owner: userland.spec.user, userland: name, namespace, minutes },
              "visit ended",
            );
            events.normal(
              userlandRef(written),
              "VisitEnded",
              `${session.user}'s visit to ${userland.spec.user}'s environment ended after ${minutes} minute${minutes === 1 ? "" : "s"}`,
            );
          }
          break;
        } catch (error) {
          if (!isConflict(error) || attempt >= WRITE_ATTEMPTS) throw error;
          userland = await store.get(name);
          if (!userland) throw notFound(`Userland "${name}" does not exist`);
        }
      }
      return {
        owner: userland.spec.user,
        templateName: userland.spec.templateName,
        visitor: session.user,
        visit: visit ?? null,
      };
    },
  );
  done();
};
