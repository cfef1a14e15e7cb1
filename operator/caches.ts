/**
 * What the operator reads: one informer per kind it works with, scoped to its namespace (owned
 * children by the managed-by label), and the indexes its event handlers and sync handlers look
 * objects up by.
 */
import type { V1Deployment, V1PersistentVolumeClaim, V1Service } from "@kubernetes/client-node";
import { ANNOTATIONS, LABELS, MANAGED_BY } from "../api/naming.ts";
import type { Template, Userland } from "../api/v1alpha1/index.ts";
import { Informer, namespacedKey } from "../lib/informer.ts";
import type { k8s } from "../lib/kube.ts";
import type { KubeRest } from "../lib/kubeRest.ts";
import type { Logger } from "../lib/logger.ts";
import { resources, type Resource } from "./resources.ts";

export interface Caches {
  templates: Informer<Template>;
  userlands: Informer<Userland>;
  deployments: Informer<V1Deployment>;
  services: Informer<V1Service>;
  pvcs: Informer<V1PersistentVolumeClaim>;
}

/** Index names; every index value is a "namespace/name" key (namespacedKey). */
export const Index = {
  /** On userlands: the Template each one uses. */
  byTemplate: "byTemplate",
  /** On deployments and services: the Userland that owns each one. */
  byUserland: "byUserland",
} as const;

/** The Userland a child belongs to: its name annotation, or the controller reference if a hand edit removed the annotation. */
export function owningUserland(child: k8s.KubernetesObject): string | undefined {
  return (
    child.metadata?.annotations?.[ANNOTATIONS.userlandName] ??
    child.metadata?.ownerReferences?.find((r) => r.controller && r.kind === "Userland")?.name
  );
}

const byOwningUserland = (child: k8s.KubernetesObject): string[] => {
  const owner = owningUserland(child);
  return owner ? [namespacedKey(child.metadata?.namespace, owner)] : [];
};

interface CacheOptions {
  kc: k8s.KubeConfig;
  rest: KubeRest;
  namespace: string;
  log: Logger;
  freeze?: boolean;
}

export function createCaches(opts: CacheOptions): Caches {
  const informer = <T extends k8s.KubernetesObject>(resource: Resource, labelSelector?: string) =>
    new Informer<T>(opts.kc, opts.rest, {
      path: resource.path(opts.namespace),
      labelSelector,
      log: opts.log.child({ informer: resource.plural }),
      freeze: opts.freeze,
    });
  const owned = `${LABELS.managedBy}=${MANAGED_BY}`;
  const caches: Caches = {
    templates: informer<Template>(resources.Template),
    userlands: informer<Userland>(resources.Userland),
    deployments: informer<V1Deployment>(resources.Deployment, owned),
    services: informer<V1Service>(resources.Service, owned),
    pvcs: informer<V1PersistentVolumeClaim>(resources.PersistentVolumeClaim, owned),
  };
  caches.userlands.addIndex(Index.byTemplate, (u) => [
    namespacedKey(u.metadata.namespace, u.spec.templateName),
  ]);
  caches.deployments.addIndex(Index.byUserland, byOwningUserland);
  caches.services.addIndex(Index.byUserland, byOwningUserland);
  return caches;
}

/** Every informer, for starting, stopping and readiness. */
export const allInformers = (caches: Caches): Informer<k8s.KubernetesObject>[] =>
  Object.values(caches) as Informer<k8s.KubernetesObject>[];
