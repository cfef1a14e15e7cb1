/**
 * The objects a real node needs in the cluster, as a kubeadm or kind cluster would have them: the
 * kubelet's role binding, the `kubernetes` Service's endpoint (the API server runs with
 * `--endpoint-reconciler-type=none` because it listens on loopback), CoreDNS with the kube-dns
 * Service, and local-path-provisioner's StorageClass and helper configuration.
 */
import { CLUSTER_DNS_IP, MACHINE_HOST, NODE_API_SERVER_PORT, NODE_IP } from "../addresses.ts";
import { REAL_NODE_LABEL, REAL_NODE_TAINT } from "./config.ts";

export const LOCAL_PATH_NAMESPACE = "local-path-storage";
export const LOCAL_PATH_SERVICE_ACCOUNT = "local-path-provisioner";
export const LOCAL_PATH_STORAGE_CLASS = "local-path";

/** What a pod spec needs to be scheduled on the real node (and only there). */
export const onRealNode = {
  nodeSelector: REAL_NODE_LABEL,
  tolerations: [{ key: REAL_NODE_TAINT, operator: "Exists", effect: "NoSchedule" }],
};

type Manifest = Record<string, unknown>;

const clusterRoleBinding = (
  name: string,
  clusterRole: string,
  subject: Record<string, string>,
): Manifest => ({
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind: "ClusterRoleBinding",
  metadata: { name },
  roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: clusterRole },
  subjects: [subject],
});

/** Needed before the kubelet starts: its permissions and the API server's in-cluster address. */
export function bootstrapObjects(): Manifest[] {
  return [
    clusterRoleBinding("userland-real-node", "system:node", {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "Group",
      name: "system:nodes",
    }),
    {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: "kubernetes",
        namespace: "default",
        labels: {
          "kubernetes.io/service-name": "kubernetes",
          "endpointslice.kubernetes.io/managed-by": "userland-real-node",
        },
      },
      addressType: "IPv4",
      endpoints: [{ addresses: [NODE_IP], conditions: { ready: true } }],
      ports: [{ name: "https", port: NODE_API_SERVER_PORT, protocol: "TCP" }],
    },
  ];
}

export function coreDnsObjects(image: string): Manifest[] {
  const labels = { "k8s-app": "kube-dns" };
  const corefile = `.:53 {
    errors
    health :8080
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    hosts {
        ${NODE_IP} ${MACHINE_HOST}
        fallthrough
    }
    cache 30
}
`;
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "coredns", namespace: "kube-system" } },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "system:coredns" },
      rules: [
        {
          apiGroups: [""],
          resources: ["endpoints", "services", "pods", "namespaces"],
          verbs: ["list", "watch"],
        },
        { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list", "watch"] },
      ],
    },
    clusterRoleBinding("system:coredns", "system:coredns", {
      kind: "ServiceAccount",
      name: "coredns",
      namespace: "kube-system",
    }),
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "coredns", namespace: "kube-system" },
      data: { Corefile: corefile },
    },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "coredns", namespace: "kube-system", labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            ...onRealNode,
            serviceAccountName: "coredns",
            priorityClassName: "system-cluster-critical",
            containers: [
              {
                name: "coredns",
                image,
                imagePullPolicy: "Never",
                args: ["-conf", "/etc/coredns/Corefile"],
                ports: [
                  { name: "dns", containerPort: 53, protocol: "UDP" },
                  { name: "dns-tcp", containerPort: 53, protocol: "TCP" },
                ],
                readinessProbe: { httpGet: { path: "/ready", port: 8181 }, periodSeconds: 2 },
                livenessProbe: { httpGet: { path: "/health", port: 8080 }, periodSeconds: 10 },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ["ALL"], add: ["NET_BIND_SERVICE"] },
                },
                volumeMounts: [{ name: "config", mountPath: "/etc/coredns", readOnly: true }],
              },
            ],
            volumes: [{ name: "config", configMap: { name: "coredns" } }],
          },
        },
      },
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "kube-dns", namespace: "kube-system", labels },
      spec: {
        selector: labels,
        clusterIP: CLUSTER_DNS_IP,
        ports: [
          { name: "dns", port: 53, protocol: "UDP", targetPort: 53 },
          { name: "dns-tcp", port: 53, protocol: "TCP", targetPort: 53 },
        ],
      },
    },
  ];
}

/**
 * local-path-provisioner's namespace, helper configuration and StorageClass; volumes go to
 * `volumeDir`. Its helper pods (mkdir/rm of a volume's directory) run `helperImage`: the
 * provisioner takes the image from this template, not from its --helper-image flag.
 */
export function localPathObjects(volumeDir: string, helperImage: string): Manifest[] {
  return [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: LOCAL_PATH_NAMESPACE } },
    {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: LOCAL_PATH_SERVICE_ACCOUNT, namespace: LOCAL_PATH_NAMESPACE },
    },
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "local-path-config", namespace: LOCAL_PATH_NAMESPACE },
      data: {
        "config.json": JSON.stringify({
          nodePathMap: [{ node: "DEFAULT_PATH_FOR_NON_LISTED_NODES", paths: [volumeDir] }],
        }),
        setup: '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n',
        teardown: '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n',
        "helperPod.yaml": JSON.stringify({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "helper-pod" },
          spec: {
            priorityClassName: "system-node-critical",
            containers: [{ name: "helper-pod", image: helperImage, imagePullPolicy: "Never" }],
          },
        }),
      },
    },
    {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: LOCAL_PATH_STORAGE_CLASS },
      provisioner: "rancher.io/local-path",
      volumeBindingMode: "WaitForFirstConsumer",
      reclaimPolicy: "Delete",
    },
  ];
}
