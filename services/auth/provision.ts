/**
 * Optional auto-provisioning: after a login, ask the user-management service to create the user's
 * Userland for the default Template. The auth service has no Kubernetes rights of its own; it
 * authenticates to the user-manager with a bearer token read from a file (a projected
 * ServiceAccount token is rotated on disk, so it is re-read on every call). 409 means the
 * Userland already exists, which is as good as created. Failures never block a login.
 */
import { readFile } from "node:fs/promises";
import type { Logger } from "../../lib/logger.ts";
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
  const base = new URL(settings.url);
  if (!base.pathname.endsWith("/")) base.pathname += "/";
  const endpoint = new URL("api/v1/userlands", base);

  async function call(user: string): Promise<ProvisionResult> {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "application/json",
    };
    if (settings.tokenFile)
      headers.authorization = `Bearer ${(await readFile(settings.tokenFile, "utf8")).trim()}`;
    const response = await fetch(endpoint, {
      method: "POST",
      headers,
      body: JSON.stringify({ user, templateName: settings.templateName }),
      signal: AbortSignal.timeout(settings.timeoutMs),
    });
    const detail = await response.text().catch(() => "");
    if (response.status === 201) return "created";
    if (response.status === 409) return "exists";
    log.warn(
      { user, status: response.status, detail: detail.slice(0, 500) },
      "auto-provisioning refused by the user-management service",
    );
    return "failed";
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
