/**
 * Optional auto-provisioning: after a login, ask the user-management service to create the user's
 * Userland of the default Template (AUTH_PROVISION_TEMPLATE) if the user has no Userland of any
 * Template yet (`ifUserHasNone`). A student holds one environment per Template, so without that
 * condition every student a teacher gave another Template's environment (the database class's)
 * would also get the default one at every sign-in.
 *
 * Why the default and not the Template whose host the student is signing in to: the auth service
 * cannot tell which Template that is (only the proxy maps hosts to Templates), and the return URL
 * is the browser's choice, so following it would let any student create an environment of any
 * Template by visiting its host. Students reach other Templates' environments when a teacher
 * assigns them (API, roster) or, for self-service Templates, from the proxy's home page.
 *
 * The auth service has no Kubernetes rights of its own; it authenticates to the user-manager with a
 * bearer token read from a file (a projected ServiceAccount token is rotated on disk, so it is
 * re-read on every call). 409 means the user already has an environment, which is as good as
 * created. Failures never block a login.
 *
 * A sign-in on its way to the teachers' console (AUTH_PROVISION_SKIP_URLS) provisions nothing: a
 * teacher who signs in to manage a class needs no environment started for them (issue 44 item 6).
 */
import type { Logger } from "../../lib/logger.ts";
import { UserManagerError, userManagerClient } from "../../lib/userManagerClient.ts";
import type { Metrics } from "./metrics.ts";

export interface ProvisionSettings {
  /** user-manager base URL. */
  url: URL;
  templateName: string;
  tokenFile?: string | undefined;
  timeoutMs: number;
  /** A sign-in returning under one of these (the teachers' console) provisions nothing. */
  skipUrls: readonly URL[];
}

export type ProvisionResult = "created" | "exists" | "failed" | "skipped";

export interface Provisioner {
  /** Provisions `user`'s Userland unless the sign-in returns to `returnTo` under a skipped URL. */
  provision(user: string, returnTo: string): Promise<ProvisionResult>;
}

/** Whether `returnTo` is under `prefix`: the same origin, and its path at or below the prefix's. */
function under(returnTo: string, prefix: URL): boolean {
  let url: URL;
  try {
    url = new URL(returnTo);
  } catch {
    return false;
  }
  const path = prefix.pathname.endsWith("/") ? prefix.pathname : `${prefix.pathname}/`;
  // A trailing slash on both sides: "/console" and "/console/x" are under "/console/", "/consoles" is not.
  return url.origin === prefix.origin && `${url.pathname}/`.startsWith(path);
}

export function createProvisioner(settings: ProvisionSettings, log: Logger, metrics: Metrics): Provisioner {
  const userManager = userManagerClient(settings);

  async function call(user: string): Promise<ProvisionResult> {
    try {
      return await userManager.create(user, settings.templateName, { ifUserHasNone: true });
    } catch (error) {
      if (!(error instanceof UserManagerError) || error.status === 0) throw error;
      log.warn(
        { user, status: error.status, detail: error.detail },
        "auto-provisioning refused by the user-management service",
      );
      return "failed";
    }
  }

  return {
    async provision(user, returnTo) {
      let result: ProvisionResult;
      if (settings.skipUrls.some((prefix) => under(returnTo, prefix))) result = "skipped";
      else
        try {
          result = await call(user);
        } catch (error) {
          log.warn({ user, err: error }, "auto-provisioning failed: user-management service unreachable");
          result = "failed";
        }
      metrics.provisions.inc({ result });
      if (result === "created") log.info({ user, template: settings.templateName }, "provisioned a Userland");
      return result;
    },
  };
}
