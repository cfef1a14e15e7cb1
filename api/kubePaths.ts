/**
 * REST paths of Kubernetes resources, built from group, version and plural. A leaf: it imports
 * nothing, so `api/` (the custom resources' paths) and `lib/` (the REST client, served namespaces)
 * both build on it without importing each other.
 */
/** The root of an API group version: the core group ("") is under /api, every other under /apis. */
const groupVersionRoot = (group: string, version: string): string =>
  group === "" ? `/api/${version}` : `/apis/${group}/${version}`;

export const paths = {
  namespaced: (
    group: string,
    version: string,
    plural: string,
    namespace: string,
    name?: string,
    sub?: string,
  ): string =>
    `${groupVersionRoot(group, version)}/namespaces/${encodeURIComponent(namespace)}/${plural}${name ? `/${encodeURIComponent(name)}` : ""}${sub ? `/${sub}` : ""}`,
  /** The collection of a namespaced resource across every namespace (list and watch only). */
  allNamespaces: (group: string, version: string, plural: string): string =>
    `${groupVersionRoot(group, version)}/${plural}`,
};
