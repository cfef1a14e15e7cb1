/**
 * Every component's admin listener: on a port of its own that no Ingress or HTTPRoute routes, so
 * the internet never sees the platform's counters. /healthz says the process runs, /readyz whether
 * it should get work, /metrics is the prom-client registry. The fastify services (auth,
 * user-manager) answer /readyz on their main port, where the kubelet probes them, so theirs has none.
 */
import { createServer, type Server } from "node:http";
import type { Registry } from "prom-client";
import { listenOn } from "./listen.ts";

export interface Readiness {
  ready: boolean;
  /** Shown in /readyz's JSON body, so a failing probe says why. */
  details: Record<string, unknown>;
}

export interface AdminServerOptions {
  registry: Registry;
  /** Serves /readyz; without it /readyz is a 404 (the component is probed elsewhere). */
  readiness?: () => Readiness;
}

export interface AdminServer {
  server: Server;
  /**
   * Resolves with the server's URL, e.g. http://127.0.0.1:9090 (port 0: any free port); on the
   * socket passed as `name` (lib/listen.ts), e.g. AUTH_ADMIN_PORT, if there is one.
   */
  listen: (port: number, host: string, name?: string) => Promise<string>;
  /** Stops listening and closes open connections. */
  close: () => Promise<void>;
}

export function createAdminServer({ registry, readiness }: AdminServerOptions): AdminServer {
  const server = createServer((req, res) => {
    const send = (code: number, body: string, type = "text/plain") => {
      res.writeHead(code, { "content-type": type });
      res.end(body);
    };
    const path = (req.url ?? "").split("?", 1)[0];
    if (path === "/healthz") return send(200, "ok\n");
    if (path === "/readyz" && readiness) {
      const { ready, details } = readiness();
      return send(ready ? 200 : 503, JSON.stringify(details) + "\n", "application/json");
    }
    if (path === "/metrics") {
      registry.metrics().then(
        (text) => send(200, text, registry.contentType),
        () => send(500, "error\n"),
      );
      return;
    }
    send(404, "not found\n");
  });
  return {
    server,
    listen: (port, host, name) => listenOn(server, port, host, name),
    close: async () => {
      const closed = new Promise<void>((resolve) =>
        server.listening ? server.close(() => resolve()) : resolve(),
      );
      server.closeAllConnections();
      await closed;
    },
  };
}
