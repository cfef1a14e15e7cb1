/**
 * An exam's NetworkPolicy (docs/decisions/0013-exams.md): the exam's environments (their pods carry
 * the exam label, copied from the Userland by operator/desired.ts) take connections only from the
 * proxy's pods and open none but to cluster DNS. The chart's environments policy leaves these pods
 * out (`userland.dev/exam DoesNotExist`): policies add up, and its internet egress would otherwise
 * stand beside this one.
 */
import type { V1NetworkPolicy } from "@kubernetes/client-node";
import { fitName, LABELS, MANAGED_BY } from "../../api/naming.ts";
import { ExamMarks, type Exam } from "../../api/v1alpha1/index.ts";
import type { ArchiveClients } from "../coursework/copyPods.ts";
import { controllerReference } from "../ownership.ts";

/** The pods allowed in: `<namespace>:<labels>` (OPERATOR_PROXY_PODS), the same shape as archive clients. */
export type ProxyPods = ArchiveClients;

/** Where cluster DNS runs (kube-dns's labels, which CoreDNS keeps for compatibility). */
export const CLUSTER_DNS = { namespace: "kube-system", labels: { "k8s-app": "kube-dns" } } as const;

export const examPolicyName = (exam: string): string => fitName(`userland-exam-${exam}`, 253);

/** As the API server spells it: @kubernetes/client-node's type calls `from` `_from`. */
export type ExamNetworkPolicy = Omit<V1NetworkPolicy, "spec"> & { spec: Record<string, unknown> };

export function examNetworkPolicy(exam: Exam, proxy: ProxyPods): ExamNetworkPolicy {
  const name = exam.metadata.name ?? "";
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: {
      name: examPolicyName(name),
      namespace: exam.metadata.namespace,
      labels: { [ExamMarks.examLabel]: name },
      ownerReferences: [controllerReference("Exam", exam)],
    },
    spec: {
      podSelector: {
        matchLabels: {
          [LABELS.managedBy]: MANAGED_BY,
          [LABELS.template]: exam.spec.templateName,
          [ExamMarks.examLabel]: name,
        },
      },
      policyTypes: ["Ingress", "Egress"],
      ingress: [
        {
          from: [
            {
              namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": proxy.namespace } },
              podSelector: { matchLabels: { ...proxy.labels } },
            },
          ],
        },
      ],
      egress: [
        {
          to: [
            {
              namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": CLUSTER_DNS.namespace } },
              podSelector: { matchLabels: { ...CLUSTER_DNS.labels } },
            },
          ],
          ports: [
            { protocol: "UDP", port: 53 },
            { protocol: "TCP", port: 53 },
          ],
        },
      ],
    },
  };
}
