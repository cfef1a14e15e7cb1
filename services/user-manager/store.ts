/**
 * The Kubernetes side: Userlands (read and write) and Templates (read only) in the namespaces
 * served (one by default; docs/decisions/0010-namespaces.md), as plain JSON through KubeRest. With
 * several, a Template name means the oldest Template of that name, a user's new Userland goes to
 * its Template's namespace, and lists span every namespace served.
 *
 * Reads go to the API server on every request instead of an informer cache: a caller who has just
 * created a Userland must see it in the next list, and the request rate of an admin API is tiny.
 * Lookups by user and Template are field selectors on the CRD's selectable fields (spec.user,
 * spec.templateName), so a class signing in at once costs one small read each, not a list of every
 * Userland each. An API server without selectable fields (Kubernetes 1.30, or the feature gate off)
 * answers 400 "field label not supported"; then the store lists everything and filters here for a
 * few minutes before asking again (helm upgrade does not update CRDs, an admin applies them), and
 * says so once in the log. A 429 (a CRD's storage answers it for a moment after an upgrade updates
 * the CRD) is sent again by KubeRest.
 */
import { userlandNameFor } from "../../api/naming.ts";
import {
  API_VERSION,
  GROUP,
  TEMPLATES,
  USERLANDS,
  VERSION,
  type Template,
  templatesPath,
  type Userland,
  UserlandAnnotations,
  userlandFieldSelector,
  userlandsPath,
} from "../../api/v1alpha1/index.ts";
import { paths } from "../../api/kubePaths.ts";
import { isNotFound, statusCode, type KubeRest, type ListResult } from "../../lib/kubeRest.ts";
import type { Logger } from "../../lib/logger.ts";
import { notFound, type ErrorLocation } from "./errors.ts";
import { oldest, ServedNamespaces } from "../../lib/namespaces.ts";

const PAGE = 500;

/** Which Userlands a list returns: exact matches of the fields given, every Userland for none. */
export interface UserlandFilter {
  user?: string | undefined;
  templateName?: string | undefined;
  /** Only these of the namespaces served (those the caller may list in); default: all of them. */
  namespaces?: readonly string[] | undefined;
}

/** The API server's answer when a CRD has no such selectable field. */
const UNSUPPORTED_FIELD = /field label not supported/i;
/** How long to filter here before asking the API server again (an admin may apply the new CRD meanwhile). */
const FIELD_SELECTOR_RETRY_MS = 5 * 60_000;

export class UserlandStore {
  readonly rest: KubeRest;
  readonly served: ServedNamespaces;
  /** Where Userlands are, in a message: `namespace "a"`, `namespaces "a", "b"` or `any namespace`. */
  readonly where: string;
  private readonly log: Logger | undefined;
  /** Until when lookups filter here: the API server refused a field selector (0: ask it). */
  private filterHereUntil = 0;
  /** Template lookups in flight, by name (getTemplate). */
  private readonly templateLookups = new Map<string, Promise<Template | undefined>>();

  /** `served`: the namespaces, or the one namespace's name. */
  constructor(rest: KubeRest, served: ServedNamespaces | string, log?: Logger) {
    this.rest = rest;
    served = typeof served === "string" ? new ServedNamespaces(undefined, served) : served;
    this.served = served;
    this.where = served.describe();
    this.log = log;
  }

  /** A collection the service may list wherever it serves: its readiness probe. */
  probePath(): string {
    return this.served.collections(GROUP, VERSION, USERLANDS)[0] ?? this.userlandPath();
  }

  /** A Userland's path in `namespace` (default: the one namespace served, else the own one). */
  private userlandPath(name?: string, namespace = this.served.single ?? this.served.own): string {
    return userlandsPath(namespace, name);
  }

  private templatePath(name?: string, namespace = this.served.single ?? this.served.own): string {
    return templatesPath(namespace, name);
  }

  /**
   * The Userlands matching `filter` exactly, page by page (a consistent snapshot of one
   * resourceVersion): filtered by the API server where it can, else here.
   */
  async list(filter: UserlandFilter = {}): Promise<Userland[]> {
    const selector = userlandFieldSelector(filter);
    if (selector !== undefined && Date.now() >= this.filterHereUntil) {
      try {
        return await this.pages(selector, filter.namespaces);
      } catch (error) {
        if (statusCode(error) !== 400 || !UNSUPPORTED_FIELD.test((error as Error).message)) throw error;
        if (this.filterHereUntil === 0) {
          this.log?.warn(
            { err: error },
            "the Userland CRD has no selectable fields: every lookup by user or Template lists all Userlands. Apply the chart's CRDs (kubectl apply --server-side --force-conflicts -f charts/userland/crds/; Kubernetes 1.31+)",
          );
        }
        this.filterHereUntil = Date.now() + FIELD_SELECTOR_RETRY_MS;
      }
    }
    const all = await this.pages(undefined, filter.namespaces);
    if (selector === undefined) return all;
    return all.filter(
      (u) =>
        (filter.user === undefined || u.spec.user === filter.user) &&
        (filter.templateName === undefined || u.spec.templateName === filter.templateName),
    );
  }

  private async pages(
    fieldSelector: string | undefined,
    namespaces: readonly string[] | undefined,
  ): Promise<Userland[]> {
    const items: Userland[] = [];
    const paths = namespaces
      ? namespaces.map((ns) => userlandsPath(ns))
      : this.served.collections(GROUP, VERSION, USERLANDS);
    for (const path of paths) items.push(...(await this.pagesOf<Userland>(path, fieldSelector)));
    return items;
  }

  private async pagesOf<T>(path: string, fieldSelector: string | undefined): Promise<T[]> {
    const items: T[] = [];
    let cont: string | undefined;
    do {
      const page = await this.rest.request<ListResult<T>>("GET", path, {
        query: { limit: PAGE, continue: cont, fieldSelector },
      });
      items.push(...page.items);
      cont = page.metadata.continue || undefined;
    } while (cont);
    return items;
  }

  /** The Userland named `name`; of several served namespaces' the oldest. */
  async get(name: string): Promise<Userland | undefined> {
    const { single } = this.served;
    if (single !== undefined) return this.getIfExists<Userland>(this.userlandPath(name, single));
    return oldest(await this.named<Userland>(USERLANDS, name));
  }

  /** Objects named `name` in every namespace served: a GET each, or one field-selected list for all. */
  private async named<T>(plural: string, name: string): Promise<T[]> {
    if (this.served.all)
      return this.pagesOf<T>(
        this.served.collections(GROUP, VERSION, plural)[0] ?? "",
        `metadata.name=${name}`,
      );
    const found = await Promise.all(
      this.served.names.map((ns) => this.getIfExists<T>(paths.namespaced(GROUP, VERSION, plural, ns, name))),
    );
    return found.filter((x) => x !== undefined);
  }

  /** The Userlands whose spec.user is exactly `user`: one per Template (hand-made duplicates are possible). */
  findByUser(user: string, namespaces?: readonly string[]): Promise<Userland[]> {
    return this.list({ user, namespaces });
  }

  /** The user's Userlands of one Template: normally none or one; hand-made duplicates are possible. */
  findPair(user: string, templateName: string, namespaces?: readonly string[]): Promise<Userland[]> {
    return this.list({ user, templateName, namespaces });
  }

  /**
   * The Template named `name`; of several served namespaces' the oldest (the one the proxy serves).
   * Callers asking while a lookup of the same name is in flight share it: in a sign-in rush every
   * student's provisioning call looks the default Template up (twice: its rights, then its
   * body), so without sharing the API server answered the same list hundreds of times at once.
   * Nothing is kept once the answer is in: the next caller asks again.
   */
  getTemplate(name: string): Promise<Template | undefined> {
    let lookup = this.templateLookups.get(name);
    if (!lookup) {
      lookup = this.lookUpTemplate(name).finally(() => this.templateLookups.delete(name));
      this.templateLookups.set(name, lookup);
    }
    return lookup;
  }

  private async lookUpTemplate(name: string): Promise<Template | undefined> {
    const { single } = this.served;
    if (single !== undefined) return this.getIfExists<Template>(this.templatePath(name, single));
    return oldest(await this.named<Template>(TEMPLATES, name));
  }

  /**
   * The Template named `name` (as getTemplate finds it) and the namespace its objects live in, or a
   * 404 that names it: what every route under /api/v1/templates/{template} starts with.
   */
  async templateOrNotFound(
    name: string,
    location: ErrorLocation | undefined = "params",
  ): Promise<{ template: Template; namespace: string }> {
    const template = await this.getTemplate(name);
    if (!template) throw notFound(`Template "${name}" does not exist in ${this.where}`, "template", location);
    return { template, namespace: template.metadata.namespace ?? this.served.own };
  }

  /** The namespaces served that hold a Template (every namespace served: listed; a list: as given). */
  async templateNamespaces(): Promise<string[]> {
    if (!this.served.all) return [...this.served.names];
    const templates = await this.pagesOf<Template>(
      this.served.collections(GROUP, VERSION, TEMPLATES)[0] ?? "",
      undefined,
    );
    return [...new Set(templates.map((t) => t.metadata.namespace ?? ""))].filter(Boolean).sort();
  }

  private async getIfExists<T>(path: string): Promise<T | undefined> {
    try {
      return await this.rest.request<T>("GET", path);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /**
   * Creates the Userland named userlandNameFor(user, templateName) in `namespace` (default: its
   * Template's); rejects with the API server's 409 if the name is taken (the pair's Userland was
   * created concurrently, or a hand-made one has it).
   */
  async create(
    user: string,
    templateName: string,
    enabled: boolean | undefined,
    createdBy: string,
    namespace?: string,
  ): Promise<Userland> {
    const ns =
      namespace ??
      this.served.single ??
      (await this.getTemplate(templateName))?.metadata.namespace ??
      this.served.own;
    return this.rest.request<Userland>("POST", this.userlandPath(undefined, ns), {
      body: {
        apiVersion: API_VERSION,
        kind: "Userland",
        metadata: {
          name: userlandNameFor(user, templateName),
          annotations: { [UserlandAnnotations.createdBy]: createdBy },
        },
        spec: { user, templateName, ...(enabled === undefined ? {} : { enabled }) },
      },
    });
  }

  /** The namespace of the Userland `name` (several served: where the oldest of that name is). */
  async namespaceOf(name: string): Promise<string | undefined> {
    const { single } = this.served;
    return single ?? (await this.get(name))?.metadata.namespace;
  }

  /** A JSON merge patch; undefined when the Userland does not exist. */
  async patch(name: string, patch: unknown): Promise<Userland | undefined> {
    const ns = await this.namespaceOf(name);
    if (ns === undefined) return undefined;
    try {
      return await this.rest.request<Userland>("PATCH", this.userlandPath(name, ns), {
        body: patch,
        contentType: "application/merge-patch+json",
      });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /**
   * Deletes one Userland (in `namespace`, default: where the Userland of that name is); false when
   * it did not exist. `uid` guards against deleting a Userland re-created under the same name since
   * it was looked at.
   */
  async delete(name: string, uid?: string, namespace?: string): Promise<boolean> {
    const ns = namespace ?? (await this.namespaceOf(name));
    if (ns === undefined) return false;
    try {
      await this.rest.request("DELETE", this.userlandPath(name, ns), {
        body: {
          apiVersion: "v1",
          kind: "DeleteOptions",
          propagationPolicy: "Background",
          ...(uid ? { preconditions: { uid } } : {}),
        },
      });
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }
}
