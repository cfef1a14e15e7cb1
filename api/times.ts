/** Times as Kubernetes writes them in objects: RFC 3339 in UTC, whole seconds. */
export const kubeTime = (date: Date): string => date.toISOString().replace(/\.\d+Z$/, "Z");
