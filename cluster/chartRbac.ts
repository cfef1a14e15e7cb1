/**
 * The Helm chart's rights for components that run outside the chart (the local platform, the
 * component tests, benchmarks): helm renders charts/userland's RBAC and admission policies, and
 * exactly those objects are created. So there is one source for who may do what
 * (docs/decisions/0004-rbac.md), and each component runs under its own ServiceAccount with the
 * chart's Role, never a copy of it: a right the chart lacks fails the component's own tests first.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";
import { paths } from "../api/kubePaths.ts";
import { isAlreadyExists, type KubeRest } from "../lib/kubeRest.ts";
import { repoRoot } from "./repoRoot.ts";

const CHART_DIR = join(repoRoot, "charts", "userland");

/**
 * The chart's templates that decide what a request may do or becomes: RBAC, what RBAC cannot say
 * (the proxy may patch one annotation), and the ESC default for spec.user.
 */
const RBAC_TEMPLATES = [
  "templates/rbac.yaml",
  "templates/proxy-admission-policy.yaml",
  "templates/userland-user-default.yaml",
] as const;
/** Rendered offline, helm cannot ask the cluster; the control plane built here serves these. */
const API_VERSIONS = ["admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"];

/** The components, by their app.kubernetes.io/component label. */
export type Component = "operator" | "user-manager" | "proxy" | "auth";

export interface ChartObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: unknown;
}

export interface RenderOptions {
  /** helm's path (built with the control plane: ControlPlaneInfo.binDir). */
  helm: string;
  namespace: string;
  release: string;
  /** Chart values, as an admin's values file would give them. */
  values: Record<string, unknown>;
}

/** `helm template` of the chart's RBAC templates, offline (no cluster is asked). */
export async function renderChartRbac(opts: RenderOptions): Promise<ChartObject[]> {
  const home = mkdtempSync(join(tmpdir(), "userland-chart-rbac-"));
  try {
    const valuesFile = join(home, "values.json");
    writeFileSync(valuesFile, JSON.stringify(opts.values));
    const { stdout } = await promisify(execFile)(
      opts.helm,
      [
        "template",
        opts.release,
        CHART_DIR,
        "--namespace",
        opts.namespace,
        "--values",
        valuesFile,
        ...RBAC_TEMPLATES.flatMap((t) => ["--show-only", t]),
        ...API_VERSIONS.flatMap((v) => ["--api-versions", v]),
      ],
      {
        maxBuffer: 16 * 1024 * 1024,
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          HOME: home,
          HELM_CACHE_HOME: join(home, "cache"),
          HELM_CONFIG_HOME: join(home, "config"),
          HELM_DATA_HOME: join(home, "data"),
          KUBECONFIG: join(home, "no-kubeconfig"),
        },
      },
    ).catch((error: unknown) => {
      throw new Error(`helm template: ${(error as { stderr?: string }).stderr ?? String(error)}`);
    });
    return parseAllDocuments(stdout)
      .map((doc) => doc.toJS() as ChartObject | null)
      .filter((o): o is ChartObject => o !== null && typeof o === "object" && "kind" in o);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/** The ServiceAccount the chart gives `component`. */
export function serviceAccountOf(objects: readonly ChartObject[], component: Component): string {
  const account = objects.find(
    (o) => o.kind === "ServiceAccount" && o.metadata.labels?.["app.kubernetes.io/component"] === component,
  );
  if (!account) throw new Error(`the chart renders no ServiceAccount for the ${component}`);
  return account.metadata.name;
}

/** Where each kind the RBAC templates render is created. */
const collections: Record<string, (namespace: string) => string> = {
  "v1/ServiceAccount": (ns) => paths.namespaced("", "v1", "serviceaccounts", ns),
  "rbac.authorization.k8s.io/v1/Role": (ns) =>
    paths.namespaced("rbac.authorization.k8s.io", "v1", "roles", ns),
  "rbac.authorization.k8s.io/v1/RoleBinding": (ns) =>
    paths.namespaced("rbac.authorization.k8s.io", "v1", "rolebindings", ns),
  "rbac.authorization.k8s.io/v1/ClusterRole": () => "/apis/rbac.authorization.k8s.io/v1/clusterroles",
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": () =>
    "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
  "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy": () =>
    "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
  "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding": () =>
    "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
  "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy": () =>
    "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies",
  "admissionregistration.k8s.io/v1/MutatingAdmissionPolicyBinding": () =>
    "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings",
};

/** The API path of a rendered object's collection, or with `name` of the object itself. */
export function chartObjectPath(object: ChartObject, namespace: string, name?: string): string {
  const collection = collections[`${object.apiVersion}/${object.kind}`];
  if (!collection) throw new Error(`no API path known for ${object.apiVersion} ${object.kind}`);
  const path = collection(object.metadata.namespace ?? namespace);
  return name === undefined ? path : `${path}/${encodeURIComponent(name)}`;
}

/** Creates the rendered objects as they are (in helm's install order). */
export async function createChartObjects(
  rest: KubeRest,
  namespace: string,
  objects: readonly ChartObject[],
): Promise<void> {
  for (const object of objects) await rest.create(chartObjectPath(object, namespace), object);
}

/** The release name under which components run outside the chart: ServiceAccounts `userland-<component>`. */
const OUTSIDE_RELEASE = "userland";

export interface GrantOptions {
  /** The chart's `watchNamespaces` (default: the release namespace alone). */
  watchNamespaces?: readonly string[];
  /** Registers the deletion of cluster-scoped objects (a "*" render's ClusterRoles); required for them. */
  after?: (cleanUp: () => Promise<unknown>) => void;
  /** Other chart values the rights depend on (e.g. `operator.handInSnapshots`). */
  values?: Record<string, unknown>;
}

/**
 * Gives `component`'s ServiceAccount in `namespace` the chart's RBAC, as rendered for a release
 * named "userland": its Roles (or, for "*", ClusterRoles) and bindings; admission policies are left
 * out (cluster-wide; proven with real tokens in test/rbac/rbac.test.ts). Objects already there
 * (a second start in one namespace) are kept. Returns the ServiceAccount's name.
 */
export async function grantChartRights(
  rest: KubeRest,
  helm: string,
  component: Component,
  namespace: string,
  options: GrantOptions = {},
): Promise<string> {
  const rendered = await renderChartRbac({
    helm,
    namespace,
    release: OUTSIDE_RELEASE,
    values: { ...options.values, watchNamespaces: options.watchNamespaces ?? [] },
  });
  const objects = rendered.filter(
    (o) =>
      o.metadata.labels?.["app.kubernetes.io/component"] === component && !o.kind.includes("AdmissionPolicy"),
  );
  for (const object of objects) {
    const clusterScoped = object.kind.startsWith("Cluster");
    if (clusterScoped && !options.after)
      throw new Error(
        `${object.kind} ${object.metadata.name} is cluster-scoped: pass \`after\` to delete it`,
      );
    const created = await rest.create(chartObjectPath(object, namespace), object).then(
      () => true,
      (error: unknown) => {
        if (!isAlreadyExists(error)) throw error;
        return false;
      },
    );
    if (created && clusterScoped)
      options.after?.(() =>
        rest.delete(chartObjectPath(object, namespace, object.metadata.name)).catch(() => undefined),
      );
  }
  return serviceAccountOf(rendered, component);
}
