/**
 * The proxy's admin server: /healthz, /readyz (caches synced and not shutting down) and /metrics.
 * It listens on its own port, which students never reach.
 */
import { createServer, type Server } from "node:http";
import type { ProxyMetrics } from "./metrics.ts";
import type { UpstreamResolver } from "./resolver.ts";
import { sendJson } from "./respond.ts";
import type { ClusterView } from "./routing.ts";

export interface AdminDeps {
  cluster: Pick<ClusterView, "synced">;
  resolver: Pick<UpstreamResolver, "kind">;
  metrics: Pick<ProxyMetrics, "registry">;
  /** True once shutdown has begun: /readyz turns 503 so no new traffic is sent here. */
  closing(): boolean;
}

export function createAdminServer(deps: AdminDeps): Server {
  const { cluster, resolver, metrics } = deps;
  return createServer((req, res) => {
    const path = (req.url ?? "").split("?", 1)[0];
    if (path === "/healthz") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("ok\n");
    } else if (path === "/readyz") {
      const closing = deps.closing();
      const ready = cluster.synced() && !closing;
      sendJson(res, ready ? 200 : 503, { synced: cluster.synced(), closing, resolver: resolver.kind });
    } else if (path === "/metrics") {
      metrics.registry.metrics().then(
        (text) => {
          res.writeHead(200, { "content-type": metrics.registry.contentType });
          res.end(text);
        },
        () => {
          res.writeHead(500);
          res.end();
        },
      );
    } else {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not found\n");
    }
  });
}
