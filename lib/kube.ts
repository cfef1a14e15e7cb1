/**
 * Kubernetes client set-up shared by every component: one KubeConfig, loaded from KUBECONFIG
 * (local runs and tests) or from the in-cluster ServiceAccount (production).
 */
import * as k8s from "@kubernetes/client-node";

export { k8s };

export function loadKubeConfig(kubeconfigPath = process.env.KUBECONFIG): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (kubeconfigPath) kc.loadFromFile(kubeconfigPath);
  else kc.loadFromCluster();
  return kc;
}

// The helpers live in the modules that do not load client-node (the operator does without it);
// re-exported here for the components that use client-node anyway.
export { currentNamespace } from "./kubeConnection.ts";
export { isAlreadyExists, isConflict, isInvalid, isNotFound, statusCode } from "./kubeRest.ts";
