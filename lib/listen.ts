/** Starting a node:http server and learning its URL (port 0 picks a free port, which tests use). */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

/** Resolves with the server's URL, e.g. http://127.0.0.1:9090 or http://[::1]:9090. */
export function listenOn(server: Server, port: number, host: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const address = server.address() as AddressInfo;
      const h = address.family === "IPv6" ? `[${address.address}]` : address.address;
      resolve(`http://${h}:${address.port}`);
    });
  });
}
