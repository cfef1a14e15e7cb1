/**
 * What the ESC tests share: the chart's MutatingAdmissionPolicy that gives a Userland without
 * spec.user its name as the user, installed for one test namespace, and ESC's sample objects.
 */
import type { TestContext } from "node:test";
import { isAlreadyExists, isNotFound } from "../../lib/kubeRest.ts";
import { eventually } from "../support/cluster.ts";
import { adminRest, deploymentsPath, pvcsPath, servicesPath } from "../support/resources.ts";
import {
  applyManifests,
  helm,
  kubectl,
  ok,
  parseManifests,
  chartDir,
  type KubeObject,
} from "../chart/support.ts";

/** The chart template this file installs (rendered alone, as helm install renders it on Kubernetes 1.36+). */
const POLICY_TEMPLATE = "templates/userland-user-default.yaml";

/**
 * Renders the chart's policy for a release in `namespace` (its binding selects that namespace only,
 * so other tests sharing the control plane see the bare CRD) and applies it; removed afterwards.
 * helm template asks no cluster, so it is told the API exists, as helm install learns by discovery.
 */
export async function installUserFromNamePolicy(t: TestContext, namespace: string): Promise<KubeObject[]> {
  const rendered = ok(
    await helm([
      "template",
      "userland",
      chartDir,
      "--namespace",
      namespace,
      "--api-versions",
      "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy",
      "--show-only",
      POLICY_TEMPLATE,
    ]),
    "helm template (the user-from-name policy)",
  );
  const objects = parseManifests(rendered);
  t.after(async () => {
    for (const o of objects) {
      await kubectl([
        "delete",
        `${o.kind}.admissionregistration.k8s.io`,
        o.metadata.name,
        "--ignore-not-found",
      ]);
    }
  });
  await applyManifests(namespace, objects);
  // The API server applies a new policy once its informer has seen policy and binding: probe with
  // a server-side dry run of a Userland without spec.user until it is accepted.
  await eventually(
    "the user-from-name policy to be in force",
    async () => {
      const probe = escUserland("policy-probe", "any");
      probe.apiVersion = "userland.dev/v1alpha1";
      const result = await kubectl(
        ["apply", "--dry-run=server", "-n", namespace, "-f", "-"],
        JSON.stringify(probe),
      );
      return result.code === 0;
    },
    30_000,
    200,
  );
  return objects;
}

interface EscObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec: Record<string, unknown>;
}

/** ESC's Userland (config/samples/esc_v1alpha2_userland.yaml): its name is the user. */
export function escUserland(name: string, templateName: string, enabled?: boolean): EscObject {
  return {
    apiVersion: "esc.k06.in/v1alpha2",
    kind: "Userland",
    metadata: { name },
    spec: { templateName, ...(enabled === undefined ? {} : { enabled }) },
  };
}

/** ESC's Template (config/samples/esc_v1alpha2_template.yaml), without a storage class (the test cluster's default is used). */
export function escTemplate(name: string): EscObject {
  return {
    apiVersion: "esc.k06.in/v1alpha2",
    kind: "Template",
    metadata: { name },
    spec: {
      template: {
        spec: {
          containers: [
            {
              image: "codercom/code-server:3.8.0",
              name: "code-server",
              args: ["--auth", "none", "project"],
              volumeMounts: [{ name: "user-volume", mountPath: "/home/coder/project" }],
            },
          ],
        },
      },
      service: { ports: [{ name: "80-80", port: 80, protocol: "TCP", targetPort: 8080 }] },
      volumes: [
        {
          name: "user-volume",
          pvcSpec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "2Gi" } } },
        },
      ],
    },
  };
}

/** `object` with only its apiVersion changed to Userland's. */
export const asUserland = (object: EscObject): EscObject => ({
  ...object,
  apiVersion: "userland.dev/v1alpha1",
});

/** ESC's group and the version its Userlands and their children's owner references carry. */
export const ESC_API_VERSION = "esc.k06.in/v1alpha2";

/**
 * ESC's two CRDs as ESC declared them in substance (config/crd/bases): group esc.k06.in, namespaced
 * Template and Userland (spec {templateName, enabled}), served at v1alpha2; deleted when `t` ends.
 * While they exist, "userland" and "template" name two kinds each for kubectl (as during a real
 * migration), so only *.alone.ts files, which run one at a time after all others, install them.
 */
export async function installEscCrds(t: TestContext): Promise<void> {
  const rest = await adminRest();
  const crd = (kind: string, plural: string, spec: Record<string, unknown>) => ({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.esc.k06.in` },
    spec: {
      group: "esc.k06.in",
      scope: "Namespaced",
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() },
      versions: [
        {
          name: "v1alpha2",
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: "object",
              properties: {
                spec,
                status: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
              },
            },
          },
        },
      ],
    },
  });
  const definitions = [
    crd("Template", "templates", { type: "object", "x-kubernetes-preserve-unknown-fields": true }),
    crd("Userland", "userlands", {
      type: "object",
      required: ["templateName"],
      properties: {
        Name: { type: "string" },
        templateName: { type: "string" },
        enabled: { type: "boolean" },
      },
    }),
  ];
  t.after(async () => {
    // Gone before the next file starts: a CRD still terminating would look installed to it.
    for (const definition of definitions) {
      const path = `${CRDS_PATH}/${definition.metadata.name}`;
      await rest.delete(path).catch(() => undefined);
      await eventually(`${definition.metadata.name} to be deleted`, async () =>
        rest.get(path).then(
          () => false,
          (error: unknown) => isNotFound(error),
        ),
      );
    }
  });
  for (const definition of definitions) {
    await rest.create(CRDS_PATH, definition).catch((error: unknown) => {
      if (!isAlreadyExists(error)) throw error;
    });
  }
  for (const definition of definitions) {
    await eventually(`${definition.metadata.name} to be served`, async () => {
      const served = await rest.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
        `${CRDS_PATH}/${definition.metadata.name}`,
      );
      return served.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
    });
  }
}

const CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/** Where ESC objects live in the API. */
export const escPath = (plural: "templates" | "userlands", ns: string, name?: string) =>
  `/apis/${ESC_API_VERSION}/namespaces/${ns}/${plural}${name ? `/${name}` : ""}`;

/**
 * What ESC's controller (controllers/userland_controller.go) made for a Userland, made here as it
 * did: `<template>-<name>` Deployment and `-svc` Service selecting {app, controller, template},
 * and one `-pvc-<volume>` claim per volume with no labels. All three are controlled by the ESC
 * Userland, so deleting it with the default cascade deletes the claims: the users' data.
 */
export async function escChildren(
  ns: string,
  userland: { metadata: { name: string; uid?: string } },
  templateName: string,
  volumes: string[],
): Promise<void> {
  const rest = await adminRest();
  const name = userland.metadata.name;
  const base = `${templateName}-${name}`;
  const ownerReferences = [
    {
      apiVersion: ESC_API_VERSION,
      kind: "Userland",
      name,
      uid: userland.metadata.uid ?? "",
      controller: true,
      blockOwnerDeletion: true,
    },
  ];
  const labels = { app: base, controller: name, template: templateName };
  for (const volume of volumes) {
    await rest.create(pvcsPath(ns), {
      metadata: { name: `${base}-pvc-${volume}`, ownerReferences },
      spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "2Gi" } } },
    });
  }
  await rest.create(deploymentsPath(ns), {
    metadata: { name: base, ownerReferences },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [{ name: "code-server", image: "codercom/code-server:3.8.0" }],
          volumes: volumes.map((v) => ({
            name: v,
            persistentVolumeClaim: { claimName: `${base}-pvc-${v}` },
          })),
        },
      },
    },
  });
  await rest.create(servicesPath(ns), {
    metadata: { name: `${base}-svc`, ownerReferences },
    spec: { type: "ClusterIP", selector: labels, ports: [{ name: "80-80", port: 80, targetPort: 8080 }] },
  });
}

/** Creates an ESC object through ESC's API; returns it as stored (with its UID). */
export async function createEsc<T extends { metadata: { name: string; uid?: string } }>(
  ns: string,
  object: EscObject,
): Promise<T> {
  const plural = object.kind === "Template" ? "templates" : "userlands";
  return (await adminRest()).create<T>(escPath(plural, ns), object);
}
