/** Names for the API server's audit-log identities: the local platform's ServiceAccounts by component. */
import { NAMESPACE, type Platform } from "../dev/platform.ts";

export function identityName(username: string, platform: Pick<Platform, "serviceAccounts">): string {
  for (const [component, account] of Object.entries(platform.serviceAccounts))
    if (username === `system:serviceaccount:${NAMESPACE}:${account}`) return component;
  if (username.startsWith("system:serviceaccount:kube-system:"))
    return `kube-controller-manager (${username.slice("system:serviceaccount:kube-system:".length)})`;
  return username;
}
