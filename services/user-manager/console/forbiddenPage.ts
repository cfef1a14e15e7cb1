/**
 * The console's 403 page: what was refused, and how an admin grants it. What a teacher may do is
 * decided by Kubernetes RBAC, so the page names the Kubernetes user and groups RBAC saw and the
 * RoleBinding that would appoint them, in the namespace where the right was asked.
 */
import { html } from "../../../lib/html.ts";
import { ALL_NAMESPACES } from "../../../lib/namespaces.ts";
import { errorPage, type Viewer } from "./layout.ts";

/**
 * The chart's ClusterRole (its default name, charts/userland/values.yaml rbac.*RoleName) that grants
 * each resource the console asks RBAC about: the page names the one the refusal needs, not a role
 * the teacher may hold already (issue 44 item 2). test/chart/chart.test.ts checks it against the
 * rendered chart.
 */
export const CHART_ROLE_FOR: Readonly<Record<string, string>> = {
  userlands: "userland-teacher",
  "templates/coursework": "userland-course-teacher",
  assignments: "userland-course-teacher",
  submissions: "userland-course-teacher",
  "submissions/review": "userland-course-teacher",
  classarchives: "userland-course-teacher",
  exams: "userland-course-teacher",
  "userlands/visit": "userland-environment-visitor",
  "userlands/visit-teacher": "userland-teacher-visitor",
  templates: "userland-template-admin",
};

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
  const resource = (refusedIn as { resource?: unknown } | undefined)?.resource;
  const role = (typeof resource === "string" && CHART_ROLE_FOR[resource]) || "userland-teacher";
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
        This needs the chart's <code>${role}</code> role; an admin grants it with a RoleBinding:
      </p>
      <pre><code>kubectl -n ${hintNamespace} create rolebinding ${role.replace(/^userland-/, "")}-${viewer?.user.replace(/[^a-z0-9]+/gi, "-").toLowerCase() ?? "x"} --clusterrole=${role} --user=${who}</code></pre>`,
  );
}
