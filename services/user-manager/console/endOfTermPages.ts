/**
 * The console's end-of-term pages (docs/decisions/0011-coursework.md, "End of term"): a class's
 * archives with "Plan this class's archive", and one archive's plan (Stop and archive, Cancel), its step, its dry run (what will be deleted, what
 * is kept and why), the class's zip and "End the class", which sends the dry run's hash back.
 */
import { WHOLE_TEMPLATE } from "../../../api/v1alpha1/index.ts";
import { formatBytes } from "../../../lib/formatBytes.ts";
import { html } from "../../../lib/html.ts";
import type { ClassArchiveView } from "../classArchives.ts";
import { formatTime } from "./assignmentPages.ts";
import { CONSOLE_PATH, classUrl, consolePage, type Viewer } from "./layout.ts";

export function endOfTermUrl(template: string, klass?: string, extra: Record<string, string> = {}): string {
  const query = new URLSearchParams({ template, ...(klass ? { class: klass } : {}), ...extra });
  return `${CONSOLE_PATH}/end-of-term?${query.toString()}`;
}

export function classArchiveUrl(template: string, name: string, extra: Record<string, string> = {}): string {
  return `${CONSOLE_PATH}/class-archive?${new URLSearchParams({ template, name, ...extra }).toString()}`;
}

const STEPS: Record<NonNullable<ClassArchiveView["phase"]>, string> = {
  Planned: "Planned: nobody is stopped yet",
  Stopping: "Stopping the class's environments",
  Archiving: "Writing the archive",
  Verifying: "Reading the archive back",
  DryRun: "Dry run: nothing deleted yet",
  Ending: "Ending: deleting the listed environments",
  Ended: "Ended",
  Cancelled: "Cancelled",
  Failed: "Failed",
};

export function endOfTermPage(
  viewer: Viewer,
  template: string,
  klass: string | undefined,
  items: ClassArchiveView[],
): string {
  const title = klass ? `End of term: class ${klass} (${template})` : `End of term: ${template}`;
  return consolePage(
    title,
    viewer,
    html`<p class="muted">
        <a href="${classUrl(template, klass)}">Back to the class</a>
      </p>
      <p>
        Planning an archive lists whose environments it would stop and whose volumes it would read; nothing
        stops yet. On the plan's page, <strong>Stop and archive</strong> stops those environments, writes
        every student's volumes and the class's hand-ins into one zip in the Template's collection, reads it
        back and lists what ending the class would delete; each student's home page says why their environment
        stopped. <strong>Cancel</strong> starts them again, at any step before the end. Nothing is deleted
        until you end the class on the archive's page.
      </p>
      ${
        klass
          ? ""
          : html`<p>
              <strong>No class is chosen: this archives every student's environment of ${template}.</strong>
            </p>`
      }
      <form method="post" action="${CONSOLE_PATH}/end-of-term/create">
        <input type="hidden" name="template" value="${template}" />
        ${klass ? html`<input type="hidden" name="class" value="${klass}" />` : ""}
        <button type="submit">Plan this class's archive</button>
      </form>
      <h2>Archives</h2>
      ${
        items.length === 0
          ? html`<p class="muted">None yet.</p>`
          : html`<ul>
              ${items.map(
                (c) =>
                  html`<li>
                    <a href="${classArchiveUrl(template, c.name)}">${c.name}</a>${
                      c.class && c.class !== WHOLE_TEMPLATE ? html` (class <code>${c.class}</code>)` : ""
                    }:
                    ${c.phase ? STEPS[c.phase] : "starting"}${c.createdAt ? html`, ${formatTime(c.createdAt)}` : ""}
                  </li>`,
              )}
            </ul>`
      }`,
  );
}

const listTable = (caption: string, rows: ClassArchiveView["toDelete"], withReason: boolean) =>
  html`<table>
    <caption>
      ${caption}
    </caption>
    <thead>
      <tr>
        <th scope="col">Student</th>
        <th scope="col">Environment</th>
        <th scope="col">Volumes</th>
        ${withReason ? html`<th scope="col">Why it is kept</th>` : ""}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (r) =>
          html`<tr>
            <th scope="row"><span class="user">${r.user}</span></th>
            <td class="mono">${r.userland}</td>
            <td class="mono">${r.claims.join(", ")}</td>
            ${withReason ? html`<td>${r.reason ?? ""}</td>` : ""}
          </tr>`,
      )}
    </tbody>
  </table>`;

const planTable = (plan: ClassArchiveView["plan"]) =>
  html`<table>
    <caption>
      The class: environments stopped and volumes read
    </caption>
    <thead>
      <tr>
        <th scope="col">Student</th>
        <th scope="col">Environment</th>
        <th scope="col">Running when planned</th>
        <th scope="col">Volumes read</th>
      </tr>
    </thead>
    <tbody>
      ${plan.map(
        (p) =>
          html`<tr>
            <th scope="row"><span class="user">${p.user}</span></th>
            <td class="mono">${p.userland}</td>
            <td>${p.running ? "yes" : "no"}</td>
            <td class="mono">${p.claims.join(", ")}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;

/** The plan's and the steps' buttons: stop and archive (a plan), cancel (any step before the end). */
function switches(c: ClassArchiveView) {
  const form = (action: "stop" | "cancel", label: string, danger: boolean) =>
    html`<form method="post" action="${CONSOLE_PATH}/class-archive/${action}">
      <input type="hidden" name="template" value="${c.templateName}" />
      <input type="hidden" name="name" value="${c.name}" />
      <button type="submit" ${danger ? html`class="danger"` : ""}>${label}</button>
    </form>`;
  const running = c.plan.filter((p) => p.running).length;
  if (c.phase === "Planned")
    return html`<div class="toolbar">
      ${form("stop", `Stop ${running} environment${running === 1 ? "" : "s"} and archive`, true)}
      ${form("cancel", "Cancel the plan", false)}
    </div>`;
  if (c.phase && ["Stopping", "Archiving", "Verifying", "DryRun", "Failed"].includes(c.phase))
    return html`<div class="toolbar">${form("cancel", "Cancel and restart everyone", false)}</div>`;
  return "";
}

export function classArchivePage(viewer: Viewer, c: ClassArchiveView, notice?: string): string {
  const zip = `/api/v1/templates/${encodeURIComponent(c.templateName)}/classarchives/${encodeURIComponent(c.name)}/archive`;
  const ending = c.phase === "DryRun" && c.dryRunHash;
  return consolePage(
    `Class archive ${c.name}`,
    viewer,
    html`${notice ? html`<p class="notice" role="status">${notice}</p>` : ""}
      <p class="muted">
        Template <code>${c.templateName}</code>${
          c.class && c.class !== WHOLE_TEMPLATE
            ? html`, class <code>${c.class}</code>`
            : html`, every environment`
        }
        · <a href="${classArchiveUrl(c.templateName, c.name)}">Refresh</a> ·
        <a href="${endOfTermUrl(c.templateName, c.class && c.class !== WHOLE_TEMPLATE ? c.class : undefined)}"
          >All archives of this class</a
        >
      </p>
      <p role="status" id="phase">
        <strong>${c.phase ? STEPS[c.phase] : "Starting"}</strong>${
          // The dry run's message tells a kubectl user which fields to set: here the form below does.
          c.message && c.phase !== "DryRun" ? html`: ${c.message}` : ""
        }
      </p>
      <p>
        ${c.students} student${c.students === 1 ? "" : "s"}, ${c.verified} read back and
        verified${
          c.deleted !== null
            ? html`, ${c.deleted} deleted${c.endedAt ? html` (${formatTime(c.endedAt)})` : ""}`
            : ""
        }.
      </p>
      ${
        c.archive?.verified
          ? html`<p>
              <a href="${zip}" download>Download the class's zip</a>
              <span class="muted"
                >(${c.archive.bytes !== null ? formatBytes(c.archive.bytes) : ""}; SHA-256
                <code>${c.archive.sha256 ?? ""}</code>; kept in the collection at
                <code>${c.archive.path}</code>)</span
              >
            </p>`
          : ""
      }
      ${c.phase === "Planned" ? planTable(c.plan) : ""} ${switches(c)}
      ${c.toDelete.length > 0 ? listTable(c.phase === "Ended" ? "Deleted" : "Ending the class deletes", c.toDelete, false) : ""}
      ${c.kept.length > 0 ? listTable("Kept", c.kept, true) : ""}
      ${
        ending
          ? html`<form method="post" action="${CONSOLE_PATH}/class-archive/end">
              <input type="hidden" name="template" value="${c.templateName}" />
              <input type="hidden" name="name" value="${c.name}" />
              <input type="hidden" name="confirm" value="${c.dryRunHash ?? ""}" />
              <p>
                <input type="checkbox" id="understood" name="understood" value="yes" required />
                <label for="understood"
                  >I understand that the ${c.toDelete.length} environment${c.toDelete.length === 1 ? "" : "s"}
                  listed above and their volumes will be deleted; the zip stays in the collection.</label
                >
              </p>
              <button type="submit" class="danger">End the class</button>
            </form>`
          : ""
      }`,
  );
}
