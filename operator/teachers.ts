/**
 * Who teaches a Template: Kubernetes RBAC decides, as for the console (docs/decisions/0009,
 * 0011). A Userland's person is a teacher of its Template when a LocalSubjectAccessReview allows
 * the session user (`<prefix><spec.user>`, the name the user-manager gives a signed-in person)
 * `update` on `templates/coursework` of that Template in its namespace, with the groups the
 * person's latest session carried (their session record, api/sessions.ts, reported at each
 * sign-in): a RoleBinding to a `userland:group:…` group appoints teachers here as in the console
 * (issue 41 item 7). Someone who has not signed in since groups were recorded is asked about
 * without them.
 *
 * Answers are cached for a TTL, denials too: unlike the user-manager, which answers a person
 * waiting for a newly granted right, the operator asks on its own schedule for every student of
 * every Template with course folders, and the students (nearly all denials) are the many. A grant
 * or a revocation shows within the TTL (the Userland sync asks again after it: syncUserland's
 * againAfterMs). When the API server cannot answer, the last answer stands (a teacher's pod is not
 * rolled to read-only by a network blip); with no answer yet the sync fails and is retried.
 */
import { LRUCache } from "lru-cache";
import { GROUP, TEMPLATES } from "../api/v1alpha1/index.ts";
import type { KubeRest } from "../lib/kubeRest.ts";
import type { Logger } from "../lib/logger.ts";
import { resources } from "./resources.ts";

/** The subresource a teacher may `update`: it exists for RBAC only (the API serves no such path). */
export const COURSEWORK_SUBRESOURCE = "coursework";

/** Most answers kept: one per person and Template with course folders. */
const MAX_ANSWERS = 50_000;

export interface TeachersOptions {
  rest: KubeRest;
  /** The session user prefix (`OPERATOR_SESSION_USER_PREFIX`, as the user-manager's). */
  userPrefix: string;
  /** The session group prefix (`OPERATOR_SESSION_GROUP_PREFIX`, as the user-manager's). */
  groupPrefix: string;
  /** The identity provider's groups of the person's latest session, unprefixed. */
  groupsOf(user: string): readonly string[];
  /** How long an answer is used before it is asked again. */
  ttlMs: number;
  log: Logger;
  /** Milliseconds now (tests replace it). */
  now?: () => number;
}

interface Answer {
  teacher: boolean;
  at: number;
}

export class Teachers {
  private readonly opts: TeachersOptions;
  private readonly answers = new LRUCache<string, Answer>({ max: MAX_ANSWERS });
  private readonly asking = new Map<string, Promise<boolean>>();
  private readonly now: () => number;

  constructor(opts: TeachersOptions) {
    this.opts = opts;
    this.now = opts.now ?? Date.now;
  }

  get ttlMs(): number {
    return this.opts.ttlMs;
  }

  /** Whether `user` (a Userland's spec.user) teaches Template `template` of `namespace`. */
  async isTeacher(namespace: string, template: string, user: string): Promise<boolean> {
    const groups = this.opts.groupsOf(user);
    // The groups are part of the question: a new sign-in with other groups asks again.
    const key = JSON.stringify([namespace, template, user, groups]);
    const known = this.answers.get(key);
    if (known && this.now() - known.at < this.opts.ttlMs) return known.teacher;
    // Fresh for a TTL from when it was asked: the sync that asked schedules the next question a
    // TTL after it ends, so that one always finds the answer expired.
    const askedAt = this.now();
    let pending = this.asking.get(key);
    if (!pending) {
      pending = this.ask(namespace, template, user, groups).finally(() => this.asking.delete(key));
      this.asking.set(key, pending);
    }
    try {
      const teacher = await pending;
      this.answers.set(key, { teacher, at: askedAt });
      return teacher;
    } catch (error) {
      if (!known) throw error;
      this.opts.log.warn(
        { namespace, template, user, err: (error as Error).message },
        "could not ask RBAC whether a person teaches a Template; keeping the last answer",
      );
      return known.teacher;
    }
  }

  private async ask(
    namespace: string,
    template: string,
    user: string,
    groups: readonly string[],
  ): Promise<boolean> {
    const review = await this.opts.rest.create<{ status?: { allowed?: boolean } }>(
      resources.LocalSubjectAccessReview.path(namespace),
      {
        apiVersion: "authorization.k8s.io/v1",
        kind: "LocalSubjectAccessReview",
        metadata: { namespace },
        spec: {
          user: this.opts.userPrefix + user,
          groups: groups.map((group) => this.opts.groupPrefix + group),
          resourceAttributes: {
            namespace,
            verb: "update",
            group: GROUP,
            resource: TEMPLATES,
            subresource: COURSEWORK_SUBRESOURCE,
            name: template,
          },
        },
      },
    );
    return review.status?.allowed === true;
  }
}
