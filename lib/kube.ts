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

/** The namespace this process works in: USERLAND_NAMESPACE, else the ServiceAccount's, else "default". */
export async function currentNamespace(): Promise<string> {
  if (process.env.USERLAND_NAMESPACE) return process.env.USERLAND_NAMESPACE;
  try {
    const { readFile } = await import("node:fs/promises");
    return (await readFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace", "utf8")).trim();
  } catch {
    return "default";
  }
}

/** The HTTP status of a failed API call (client-node's ApiException and KubeRest's KubeError carry `code`). */
export function statusCode(error: unknown): number | undefined {
  if (error && typeof error === "object" && "code" in error && typeof error.code === "number")
    return error.code;
  return undefined;
}

export const isNotFound = (error: unknown): boolean => statusCode(error) === 404;
export const isConflict = (error: unknown): boolean => statusCode(error) === 409;
/** A create found an object of that name: 409, as for a conflicting update, told apart by the call made. */
export const isAlreadyExists = (error: unknown): boolean => statusCode(error) === 409;
/** The API server refused an object as invalid (422), or the request as malformed (400). */
export const isInvalid = (error: unknown): boolean => {
  const code = statusCode(error);
  return code === 422 || code === 400;
};
