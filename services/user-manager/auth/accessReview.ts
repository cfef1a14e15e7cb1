/**
 * "May this caller do that?", asked of Kubernetes RBAC, and the refusal that says what a Role must
 * grant. LocalSubjectAccessReview rather than the cluster-scoped SubjectAccessReview: it answers the
 * same question for one namespace and needs only a namespaced Role, so the service cannot probe
 * anyone's permissions elsewhere in the cluster (only with every namespace served does a call that
 * names no Userland ask cluster-wide).
 */
import { GROUP } from "../../../api/v1alpha1/index.ts";
import type { KubeRest } from "../../../lib/kubeRest.ts";
import { ALL_NAMESPACES } from "../../../lib/namespaces.ts";
import { HttpError } from "../errors.ts";
import type { Metrics } from "../metrics.ts";
import {
  callerKey,
  resourceName,
  reviewCache,
  USERLAND_RESOURCE,
  type Caller,
  type Resource,
  type Verb,
} from "./caller.ts";

export interface AccessReviewerOptions {
  rest: KubeRest;
  /** Where a review without a namespace of its own asks. */
  namespace: string;
  ttlMs: number;
  metrics: Metrics;
}

export interface Decision {
  allowed: boolean;
  reason?: string;
}

/** "May this caller do `verb` on userlands.userland.dev (or `resource`) here?", asked of Kubernetes RBAC. */
export class AccessReviewer {
  private readonly opts: AccessReviewerOptions;
  // Only grants are cached: a newly granted permission works at once, a revoked one within the TTL.
  private readonly allowed = reviewCache<true>();

  constructor(opts: AccessReviewerOptions) {
    this.opts = opts;
  }

  /**
   * `namespace` "*" asks about every namespace at once (a cluster-wide SubjectAccessReview: with
   * every namespace served, only that answers for a call that names no Userland).
   */
  async review(
    caller: Caller,
    verb: Verb,
    name?: string,
    namespace = this.opts.namespace,
    resource: Resource = USERLAND_RESOURCE,
  ): Promise<Decision> {
    const { rest, ttlMs, metrics } = this.opts;
    const all = namespace === ALL_NAMESPACES;
    const keyOf = (ns: string, n: string) =>
      JSON.stringify([ns, callerKey(caller), verb, n, resourceName(resource)]);
    const key = keyOf(namespace, name ?? "");
    if (this.allowed.get(key)) return { allowed: true };
    // RBAC grants a verb without a name only by a rule naming no resourceNames, which grants it
    // for every name: one review answers a bulk action over a whole class (issue 29).
    if (name && (this.allowed.get(keyOf(namespace, "")) || this.allowed.get(keyOf(ALL_NAMESPACES, ""))))
      return { allowed: true };
    let status:
      { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string } | undefined;
    try {
      const review = await rest.create<{ status?: typeof status }>(
        all
          ? "/apis/authorization.k8s.io/v1/subjectaccessreviews"
          : `/apis/authorization.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/localsubjectaccessreviews`,
        {
          apiVersion: "authorization.k8s.io/v1",
          kind: all ? "SubjectAccessReview" : "LocalSubjectAccessReview",
          ...(all ? {} : { metadata: { namespace } }),
          spec: {
            user: caller.username,
            groups: caller.groups,
            ...(caller.uid ? { uid: caller.uid } : {}),
            ...(caller.extra ? { extra: caller.extra } : {}),
            resourceAttributes: {
              ...(all ? {} : { namespace }),
              verb,
              group: GROUP,
              resource: resource.resource,
              ...(resource.subresource ? { subresource: resource.subresource } : {}),
              ...(name ? { name } : {}),
            },
          },
        },
      );
      status = review.status;
    } catch (error) {
      metrics.accessReviews.inc({ verb, result: "error" });
      throw error;
    }
    const allowed = status?.allowed === true;
    metrics.accessReviews.inc({ verb, result: allowed ? "allowed" : "denied" });
    if (allowed && ttlMs > 0) this.allowed.set(key, true, { ttl: ttlMs });
    return { allowed, ...(status?.reason ? { reason: status.reason } : {}) };
  }
}

/** RBAC's refusal of `verb` on `resource` (named `name`) in `ns`, saying what a Role must grant. */
export function forbidden(
  caller: Caller,
  verb: Verb,
  ns: string,
  resource: Resource,
  name?: string,
): HttpError {
  const plural = resourceName(resource);
  const what = name ? `${plural}.${GROUP} "${name}"` : `${plural}.${GROUP}`;
  const all = ns === ALL_NAMESPACES;
  return new HttpError(
    403,
    "Forbidden",
    `${caller.username} may not ${verb} ${what} ${all ? "in every namespace" : `in namespace "${ns}"`}: ` +
      `a ${all ? "ClusterRole" : "Role"} bound to the caller must grant verb "${verb}" on resource "${plural}" in API group "${GROUP}"`,
    {
      extra: {
        permission: { verb, group: GROUP, resource: plural, namespace: ns, ...(name ? { name } : {}) },
      },
    },
  );
}
