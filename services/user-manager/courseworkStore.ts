/**
 * Assignments, Submissions and ClassArchives (docs/decisions/0011-coursework.md) as plain JSON through KubeRest,
 * read straight from the API server like Userlands (store.ts). The user-manager writes only what a
 * person asked for after RBAC allowed them: an Assignment a teacher creates, its release and
 * feedbackRelease, a student's own Submission's hand-in request, and a class's archive and its end. Every change of an existing
 * object carries the resourceVersion it was decided on: a conflict is read again and decided
 * again, never written over.
 */
import { submissionIsOf } from "../../api/assignmentIdentity.ts";
import {
  assignmentsPath,
  classArchivesPath,
  submissionsPath,
  API_VERSION,
  GROUP,
  SUBMISSIONS,
  VERSION,
  type Assignment,
  type AssignmentSpec,
  type ClassArchive,
  type Submission,
} from "../../api/v1alpha1/index.ts";
import { slug } from "../../api/naming.ts";
import { isConflict, isNotFound, type KubeRest } from "../../lib/kubeRest.ts";
import type { ServedNamespaces } from "../../lib/namespaces.ts";

/** Times a decision is read and made again after the object changed under it. */
const CONFLICT_ATTEMPTS = 5;
const PAGE = 500;

/** A field selector value, escaped as the API server unescapes it (apimachinery fields.EscapeValue). */
const escapeField = (value: string) => value.replace(/[\\,=]/g, (c) => `\\${c}`);

/** What a change decides from the object as read: the new object, or a value to answer without writing. */
export type Decision<T, R> = { write: T } | { answer: R };

export class CourseworkStore {
  private readonly rest: KubeRest;
  private readonly served: ServedNamespaces;

  constructor(rest: KubeRest, served: ServedNamespaces) {
    this.rest = rest;
    this.served = served;
  }

  async getAssignment(namespace: string, name: string): Promise<Assignment | undefined> {
    try {
      return await this.rest.get<Assignment>(assignmentsPath(namespace, name));
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** The Assignments of one Template (the CRD has no selectable templateName: filtered here). */
  async assignmentsOf(namespace: string, templateName: string): Promise<Assignment[]> {
    const all = await this.pages<Assignment>(assignmentsPath(namespace));
    return all.filter((a) => a.spec.templateName === templateName);
  }

  createAssignment(namespace: string, name: string, spec: AssignmentSpec, createdBy: string) {
    return this.rest.create<Assignment>(assignmentsPath(namespace), {
      apiVersion: API_VERSION,
      kind: "Assignment",
      metadata: { name, annotations: { "userland.dev/created-by": createdBy } },
      spec,
    });
  }

  /**
   * Reads the Assignment, lets `decide` choose, and writes the choice with the resourceVersion it
   * was made on (PUT); on a conflict, reads and decides again. undefined: no such Assignment.
   */
  async changeAssignment<R>(
    namespace: string,
    name: string,
    decide: (current: Assignment) => Decision<Assignment, R>,
    written: (updated: Assignment) => R,
  ): Promise<R | undefined> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.getAssignment(namespace, name);
      if (!current) return undefined;
      const decision = decide(current);
      if ("answer" in decision) return decision.answer;
      try {
        return written(await this.rest.replace<Assignment>(assignmentsPath(namespace, name), decision.write));
      } catch (error) {
        if (!isConflict(error) || attempt >= CONFLICT_ATTEMPTS) throw error;
      }
    }
  }

  /**
   * The Submissions of one Assignment (a field selector on spec.assignment), none of an earlier
   * Assignment of its name that is still being deleted.
   */
  async submissionsOf(a: Assignment): Promise<Submission[]> {
    const found = await this.pages<Submission>(
      submissionsPath(a.metadata.namespace ?? ""),
      `spec.assignment=${escapeField(a.metadata.name ?? "")}`,
    );
    return found.filter((s) => submissionIsOf(s, a));
  }

  /** One student's Submissions in every namespace served (a field selector on spec.user). */
  async submissionsOfUser(user: string): Promise<Submission[]> {
    const items: Submission[] = [];
    for (const path of this.served.collections(GROUP, VERSION, SUBMISSIONS))
      items.push(...(await this.pages<Submission>(path, `spec.user=${escapeField(user)}`)));
    return items;
  }

  /**
   * The student's Submission of an Assignment, found by its fields (a hand-made one may have any
   * name): the one named by submissionNameFor when there are several, else the oldest.
   */
  async submissionOf(a: Assignment, user: string): Promise<Submission | undefined> {
    const found = await this.pages<Submission>(
      submissionsPath(a.metadata.namespace ?? ""),
      `spec.assignment=${escapeField(a.metadata.name ?? "")},spec.user=${escapeField(user)}`,
    );
    // Checked again: the page must never act on another student's Submission whatever the server sends.
    const own = found.filter((s) => s.spec.user === user && submissionIsOf(s, a));
    return own.sort((a, b) =>
      String(a.metadata.creationTimestamp ?? "").localeCompare(String(b.metadata.creationTimestamp ?? "")),
    )[0];
  }

  /**
   * Like changeAssignment for a Submission's spec: a JSON merge patch carrying the resourceVersion
   * the decision was made on, read and decided again on a conflict.
   */
  async changeSubmission<R>(
    namespace: string,
    find: () => Promise<Submission | undefined>,
    decide: (current: Submission) => Decision<Record<string, unknown>, R>,
    written: (updated: Submission) => R,
  ): Promise<R | undefined> {
    for (let attempt = 1; ; attempt++) {
      const current = await find();
      if (!current) return undefined;
      const decision = decide(current);
      if ("answer" in decision) return decision.answer;
      const patch = {
        ...decision.write,
        metadata: { resourceVersion: current.metadata.resourceVersion },
      };
      try {
        return written(
          await this.rest.patch<Submission>(submissionsPath(namespace, current.metadata.name ?? ""), patch),
        );
      } catch (error) {
        if (!isConflict(error) || attempt >= CONFLICT_ATTEMPTS) throw error;
      }
    }
  }

  async getClassArchive(namespace: string, name: string): Promise<ClassArchive | undefined> {
    try {
      return await this.rest.get<ClassArchive>(classArchivesPath(namespace, name));
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** The ClassArchives of one Template, newest first. */
  async classArchivesOf(namespace: string, templateName: string): Promise<ClassArchive[]> {
    const all = await this.pages<ClassArchive>(classArchivesPath(namespace));
    return all
      .filter((c) => c.spec.templateName === templateName)
      .sort((a, b) =>
        String(b.metadata.creationTimestamp ?? "").localeCompare(String(a.metadata.creationTimestamp ?? "")),
      );
  }

  /** `klass`: a class label's value, or WHOLE_TEMPLATE ("*", slugged to nothing in the name). */
  createClassArchive(namespace: string, templateName: string, klass: string, createdBy: string) {
    return this.rest.create<ClassArchive>(classArchivesPath(namespace), {
      apiVersion: API_VERSION,
      kind: "ClassArchive",
      metadata: {
        generateName: `${templateName}-${klass && slug(klass, 20) ? `${slug(klass, 20)}-` : ""}end-`,
        annotations: { "userland.dev/created-by": createdBy },
      },
      spec: { templateName, class: klass },
    });
  }

  /** Turns on spec.archive or spec.cancel, on the resourceVersion it was checked against. */
  switchClassArchive(current: ClassArchive, field: "archive" | "cancel"): Promise<ClassArchive> {
    return this.rest.patch<ClassArchive>(
      classArchivesPath(current.metadata.namespace ?? "", current.metadata.name ?? ""),
      { metadata: { resourceVersion: current.metadata.resourceVersion }, spec: { [field]: true } },
    );
  }

  /**
   * Asks the operator to end the class: spec.end with the hash the person confirmed, written on the
   * resourceVersion it was checked against (409 from the API server when the object changed since).
   */
  endClassArchive(current: ClassArchive, confirm: string): Promise<ClassArchive> {
    return this.rest.patch<ClassArchive>(
      classArchivesPath(current.metadata.namespace ?? "", current.metadata.name ?? ""),
      { metadata: { resourceVersion: current.metadata.resourceVersion }, spec: { end: true, confirm } },
    );
  }

  private async pages<T>(path: string, fieldSelector?: string): Promise<T[]> {
    const items: T[] = [];
    let cont: string | undefined;
    do {
      const page = await this.rest.list<T>(path, { query: { limit: PAGE, continue: cont, fieldSelector } });
      items.push(...page.items);
      cont = page.metadata.continue || undefined;
    } while (cont);
    return items;
  }
}
