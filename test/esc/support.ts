/**
 * What the ESC tests share: the chart's MutatingAdmissionPolicy that gives a Userland without
 * spec.user its name as the user, installed for one test namespace, and ESC's sample objects.
 */
import type { TestContext } from "node:test";
import { eventually } from "../support/cluster.ts";
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
