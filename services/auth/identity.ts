/**
 * Turning what a provider says into the platform identity (Userland spec.user, the X-User header).
 * Identities are used exactly as given: anything outside the allowed form is refused, never
 * rewritten, because rewriting (trimming, case folding, stripping) could make two people one user.
 */
import { USER_MAX } from "../../api/v1alpha1/userland.ts";
import { isValidUser } from "../../lib/session.ts";

export type Outcome<T> = { ok: true; value: T } | { ok: false; reason: string };

/** `prefix + value` as an identity, or why it cannot be one. `what` names the source for the message. */
export function toIdentity(value: unknown, prefix: string, what: string): Outcome<string> {
  if (typeof value !== "string" || value === "") {
    return { ok: false, reason: `Your account has no ${what}, which this platform uses as your user name.` };
  }
  const user = prefix + value;
  if (user.length > USER_MAX) {
    return {
      ok: false,
      reason: `Your ${what} is longer than ${USER_MAX} characters, which this platform cannot use as a user name.`,
    };
  }
  if (!isValidUser(user)) {
    return {
      ok: false,
      reason: `Your ${what} "${value}" contains characters this platform cannot use in a user name (only printable ASCII, without leading or trailing spaces).`,
    };
  }
  return { ok: true, value: user };
}
