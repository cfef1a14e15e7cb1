/**
 * At each sign-in, the new session's groups go to the user-manager (`POST /api/v1/sessions/seen`),
 * which records them in the user's session record (api/sessions.ts): the operator and the
 * user-manager decide without a session whether a person teaches a Template, and a teacher
 * appointed by an identity-provider group must count as one there too (issue 41 item 7). The
 * token is the proof, as for sign-out (signOut.ts, whose settings this shares): the auth service
 * names no user and no group.
 */
import type { Logger } from "../../lib/logger.ts";
import { UserManagerError, userManagerClient, userManagerFailure } from "../../lib/userManagerClient.ts";
import type { SignOutSettings } from "./signOut.ts";

export interface GroupsReport {
  /** Reports `token`'s groups; a failure is logged, never thrown: the sign-in goes on. */
  report(token: string, user: string): Promise<void>;
}

export function createGroupsReport(settings: SignOutSettings, log: Logger): GroupsReport {
  const userManager = userManagerClient(settings);
  return {
    async report(token, user) {
      try {
        // Always there on the real client (optional on the interface for the proxy's stand-ins).
        if (!userManager.sessionSeen) throw new UserManagerError(0, "the client cannot report sessions");
        await userManager.sessionSeen(token);
      } catch (error) {
        log.warn(
          { user, ...userManagerFailure(error) },
          "sign-in: the user-management service did not record the session's groups (a teacher appointed by group may count as a student until the next sign-in)",
        );
      }
    },
  };
}
