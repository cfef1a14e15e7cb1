/**
 * Starting a stopped environment goes through the user-management service (it owns the right to
 * change Userlands; the proxy only reads them). The proxy calls it with its own bearer token, for
 * the Userland it found for the verified session, never for a name taken from the request.
 */
import { readFile } from "node:fs/promises";

export interface UserManagerClient {
  /** Starts the Userland `name` (the user-manager serves one namespace: the proxy's). */
  start(name: string): Promise<void>;
}

export class UserManagerError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = "UserManagerError";
    this.status = status;
  }
}

export function userManagerClient(options: {
  url: URL;
  tokenFile?: string | undefined;
  timeoutMs?: number;
}): UserManagerClient {
  const base = options.url.href.endsWith("/") ? options.url.href : `${options.url.href}/`;
  return {
    async start(name) {
      const headers: Record<string, string> = {
        accept: "application/json",
        "content-type": "application/json",
      };
      // Re-read every time: projected ServiceAccount tokens are rotated on disk.
      if (options.tokenFile)
        headers.authorization = `Bearer ${(await readFile(options.tokenFile, "utf8")).trim()}`;
      const url = new URL(`api/v1/userlands/${encodeURIComponent(name)}/start`, base);
      let response: Response;
      try {
        response = await fetch(url, {
          method: "POST",
          headers,
          body: "{}",
          signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
        });
      } catch (error) {
        throw new UserManagerError(0, `user-manager unreachable: ${(error as Error).message}`);
      }
      const text = await response.text();
      if (!response.ok)
        throw new UserManagerError(
          response.status,
          `user-manager answered ${response.status}: ${text.slice(0, 300)}`,
        );
    },
  };
}
