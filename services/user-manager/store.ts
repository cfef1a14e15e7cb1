/**
 * The Kubernetes side: Userlands (read and write) and Templates (read only) in one namespace, as
 * plain JSON through KubeRest.
 *
 * Reads go to the API server on every request instead of an informer cache: a caller who has just
 * created a Userland must see it in the next list, and the request rate of an admin API is tiny.
 * The CRD has no selectable fields for spec.user or spec.templateName, so filters are applied
 * here after a paginated list. A 429 (a CRD's storage answers it for a moment after an upgrade
 * updates the CRD) is sent again by KubeRest.
 */
import { userlandNameFor } from "../../api/naming.ts";
import {
  API_VERSION,
  type Template,
  templatesPath,
  type Userland,
  UserlandAnnotations,
  userlandsPath,
} from "../../api/v1alpha1/index.ts";
import { isNotFound } from "../../lib/kube.ts";
import type { KubeRest, ListResult } from "../../lib/kubeRest.ts";

const PAGE = 500;

export class UserlandStore {
  readonly rest: KubeRest;
  readonly namespace: string;

  constructor(rest: KubeRest, namespace: string) {
    this.rest = rest;
    this.namespace = namespace;
  }

  userlandPath(name?: string): string {
    return userlandsPath(this.namespace, name);
  }

  templatePath(name?: string): string {
    return templatesPath(this.namespace, name);
  }

  /** Every Userland in the namespace, page by page (a consistent snapshot of one resourceVersion). */
  async listAll(): Promise<Userland[]> {
    const items: Userland[] = [];
    let cont: string | undefined;
    do {
      const page = await this.rest.request<ListResult<Userland>>("GET", this.userlandPath(), {
        query: { limit: PAGE, continue: cont },
      });
      items.push(...page.items);
      cont = page.metadata.continue || undefined;
    } while (cont);
    return items;
  }

  get(name: string): Promise<Userland | undefined> {
    return this.getIfExists<Userland>(this.userlandPath(name));
  }

  /** The Userlands whose spec.user is exactly `user` (normally one; hand-made duplicates are possible). */
  async findByUser(user: string): Promise<Userland[]> {
    return (await this.listAll()).filter((u) => u.spec.user === user);
  }

  getTemplate(name: string): Promise<Template | undefined> {
    return this.getIfExists<Template>(this.templatePath(name));
  }

  private async getIfExists<T>(path: string): Promise<T | undefined> {
    try {
      return await this.rest.request<T>("GET", path);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** Creates the Userland named userlandNameFor(user); rejects with the API server's 409 if the name is taken. */
  create(
    user: string,
    templateName: string,
    enabled: boolean | undefined,
    createdBy: string,
  ): Promise<Userland> {
    return this.rest.request<Userland>("POST", this.userlandPath(), {
      body: {
        apiVersion: API_VERSION,
        kind: "Userland",
        metadata: {
          name: userlandNameFor(user),
          annotations: { [UserlandAnnotations.createdBy]: createdBy },
        },
        spec: { user, templateName, ...(enabled === undefined ? {} : { enabled }) },
      },
    });
  }

  /** A JSON merge patch; undefined when the Userland does not exist. */
  async patch(name: string, patch: unknown): Promise<Userland | undefined> {
    try {
      return await this.rest.request<Userland>("PATCH", this.userlandPath(name), {
        body: patch,
        contentType: "application/merge-patch+json",
      });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /**
   * Deletes one Userland; false when it did not exist. `uid` guards against deleting a Userland
   * re-created under the same name since it was looked at.
   */
  async delete(name: string, uid?: string): Promise<boolean> {
    try {
      await this.rest.request("DELETE", this.userlandPath(name), {
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
