/**
 * Optional auto-provisioning: after a login, ask the user-management service to create the user's
 * Userland for the default Template. The auth service has no Kubernetes rights of its own; it
 * authenticates to the user-manager with a bearer token read from a file (a projected
 * ServiceAccount token is rotated on disk, so it is re-read on every call). 409 means the
 * Userland already exists, which is as good as created. Failures never block a login.
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
}

export type ProvisionResult = "created" | "exists" | "failed";

export interface Provisioner {
  provision(user: string): Promise<ProvisionResult>;
}

export function createProvisioner(settings: ProvisionSettings, log: Logger, metrics: Metrics): Provisioner {
  const userManager = userManagerClient(settings);

  async function call(user: string): Promise<ProvisionResult> {
    try {
      return await userManager.create(user, settings.templateName);
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
    async provision(user) {
      let result: ProvisionResult;
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
