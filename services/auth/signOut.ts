/**
 * Sign-out that ends the session everywhere (issue 29 item 5), not only on this browser: /logout
 * sends the session's own token to the user-manager (`POST /api/v1/sessions/end`), which verifies
 * it and writes the mark (api/sessions.ts) in the session's user's record; the proxy and
 * /forward-auth then refuse a copy of the cookie within seconds.
 *
 * The token is the proof: the auth service names no user and no Userland, so it cannot end anyone
 * else's sessions, and its own right (delete on userlands/sessions, a subresource without a
 * handler) is no patch on Userlands, so it cannot start or stop environments.
 */
import type { Logger } from "../../lib/logger.ts";
import { UserManagerError, userManagerClient, userManagerFailure } from "../../lib/userManagerClient.ts";
import type { Metrics } from "./metrics.ts";

export interface SignOutSettings {
  /** user-manager base URL. */
  url: URL;
  tokenFile: string;
  timeoutMs: number;
}

/**
 * "ended": refused everywhere from now on; "browser-only": the user-manager could not end it, so
 * only this browser is signed out.
 */
export type SignOutResult = "ended" | "browser-only";

export interface SignOut {
  endEverywhere(token: string, user: string): Promise<SignOutResult>;
}

export function createSignOut(settings: SignOutSettings, log: Logger, metrics: Metrics): SignOut {
  const userManager = userManagerClient(settings);
  return {
    async endEverywhere(token, user) {
      let result: SignOutResult;
      try {
        // Always there on the real client (optional on the interface for the proxy's stand-ins).
        if (!userManager.endSession) throw new UserManagerError(0, "the client cannot end sessions");
        await userManager.endSession(token);
        result = "ended";
      } catch (error) {
        log.warn(
          { user, ...userManagerFailure(error) },
          "sign-out: the user-management service did not end the session everywhere",
        );
        result = "browser-only";
      }
      metrics.signOuts.inc({ result });
      return result;
    },
  };
}
