/**
 * How a signed-in person (the auth service's session) is named to Kubernetes RBAC: their user and
 * groups behind a prefix (docs/decisions/0009-teachers.md). The user-manager asks RBAC about
 * session callers under these names, and the operator asks whether a Userland's person teaches its
 * Template (docs/decisions/0011-coursework.md): both must use the same prefix, so its default and
 * its rule live here once.
 */

/** `USER_MANAGER_SESSION_USER_PREFIX` and `OPERATOR_SESSION_USER_PREFIX` default. */
export const SESSION_USER_PREFIX_DEFAULT = "userland:";
/** `USER_MANAGER_SESSION_GROUP_PREFIX` default. */
export const SESSION_GROUP_PREFIX_DEFAULT = "userland:group:";

/**
 * A prefix put before a session's user or groups to make them Kubernetes subjects: never empty and
 * never `system:`, so a signed-in identity can never be taken for a ServiceAccount, a node or a
 * built-in group such as system:masters.
 */
export function subjectPrefix(raw: string): string {
  if (!/^[!-~]+$/.test(raw)) throw new Error("expected printable ASCII without spaces, e.g. userland:");
  if (raw.startsWith("system:"))
    throw new Error('must not start with "system:" (Kubernetes reserves it for its own identities)');
  return raw;
}
