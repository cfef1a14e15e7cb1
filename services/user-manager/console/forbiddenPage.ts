/**
 * The console's 403 page: what was refused, and how an admin grants it. What a teacher may do is
 * decided by Kubernetes RBAC, so the page names the Kubernetes user and groups RBAC saw and the
 * RoleBinding that would appoint them, in the namespace where the right was asked.
 */
import { html } from "../../../lib/html.ts";
import { ALL_NAMESPACES } from "../../../lib/namespaces.ts";
import { errorPage, type Viewer } from "./layout.ts";

/**
 * `refusedIn` is the refused permission the error carries (its `namespace`, when it names one);
 * `servedSingle` the one namespace served, if there is only one: the hint's namespace otherwise.
 */
export function forbiddenPage(
  viewer: Viewer | undefined,
  message: string,
  refusedIn: unknown,
  servedSingle: string | undefined,
): string {
  const who = viewer?.kubernetesUser ?? "";
  // Where the refused right was asked (several namespaces served: a course's), for the hint.
  const asked = (refusedIn as { namespace?: unknown } | undefined)?.namespace;
  const hintNamespace =
    typeof asked === "string" && asked !== ALL_NAMESPACES ? asked : (servedSingle ?? "<course-namespace>");
  return errorPage(
    viewer,
    "Not allowed",
    message,
    html`<p>
        What you may do here is decided by Kubernetes RBAC for the user <code>${who}</code>${
          viewer && viewer.groups.length > 0
            ? html` and the groups ${viewer.groups.map((g, i) => html`${i > 0 ? ", " : ""}<code>${g}</code>`)}`
            : ""
        }.
        An admin appoints a teacher with a RoleBinding, for example:
      </p>
      <pre><code>kubectl -n ${hintNamespace} create rolebinding teacher-${viewer?.user.replace(/[^a-z0-9]+/gi, "-").toLowerCase() ?? "x"} --clusterrole=userland-teacher --user=${who}</code></pre>`,
  );
}
