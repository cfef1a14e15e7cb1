/**
 * Stands in for a student's IDE container on the local platform: an HTTP page that shows whose
 * environment it is and the X-User header it received, and a WebSocket echo. It listens on
 * 127.0.0.1; the proxy reaches it through its upstream override (the resolver seam), never
 * through a cluster address.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer } from "ws";
import { html, Html, pageDocument } from "../lib/html.ts";

export interface DemoEnvironment {
  url: string;
  close(): Promise<void>;
}

const style = `body{font:16px system-ui,sans-serif;margin:2rem;background:#10151f;color:#e8ecf3}
code{background:#1d2533;padding:.1rem .3rem;border-radius:4px}
#log{white-space:pre;background:#1d2533;padding:1rem;border-radius:8px;min-height:3rem}`;

const echoScript = new Html(`<script>
const log = (m) => (document.getElementById("log").textContent += m + "\\n");
const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/echo");
ws.onopen = () => log("connected"); ws.onmessage = (e) => log("echo: " + e.data); ws.onclose = () => log("closed");
document.getElementById("ping").onclick = () => ws.send("hello from " + document.getElementById("owner").textContent);
</script>`);

function environmentPage(
  owner: { userland: string; user: string; template: string },
  received: string,
  visitor: string | undefined,
): string {
  return pageDocument({
    title: `${owner.user}'s environment`,
    style,
    heading: html`Demo environment of <span id="owner">${owner.user}</span>`,
    body: html`<p>Userland <code>${owner.userland}</code>, Template <code>${owner.template}</code>.</p>
      <p>X-User received: <strong id="x-user">${received}</strong></p>
      ${visitor ? html`<p>Visited by: <strong id="visitor">${visitor}</strong> (X-Userland-Visitor)</p>` : ""}
      <p>This page stands in for an IDE. WebSocket echo: <button id="ping">send</button></p>
      <div id="log"></div>`,
    end: echoScript,
  });
}

/** Starts a demo environment on 127.0.0.1:`port` (0: any free port). */
export async function startDemoEnvironment(
  owner: {
    userland: string;
    user: string;
    template: string;
  },
  port = 0,
): Promise<DemoEnvironment> {
  const server: Server = createServer((req, res) => {
    const xUser = req.headers["x-user"];
    const received = Array.isArray(xUser) ? xUser.join(", ") : (xUser ?? "(none)");
    if (req.url === "/whoami.json") {
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ ...owner, xUser: received, path: req.url }));
      return;
    }
    const visitor = req.headers["x-userland-visitor"];
    res
      .writeHead(200, { "content-type": "text/html; charset=utf-8" })
      .end(environmentPage(owner, received, Array.isArray(visitor) ? visitor.join(", ") : visitor));
  });
  const wss = new WebSocketServer({ server });
  wss.on("connection", (socket, req) => {
    const xUser = req.headers["x-user"];
    socket.on("message", (data: Buffer) =>
      socket.send(
        `${data.toString("utf8")} (X-User: ${Array.isArray(xUser) ? xUser.join(",") : (xUser ?? "none")})`,
      ),
    );
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      for (const client of wss.clients) client.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
