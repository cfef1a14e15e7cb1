/**
 * Every address of the test clusters, in one place. All are in blocks that are never routed on the
 * internet (RFC 2544 benchmarking 198.18.0.0/15, RFC 5737 documentation 192.0.2.0/24), so an
 * address handed out by a cluster cannot reach a real host even by mistake. Only the real node's
 * network namespace (cluster/node) ever carries traffic to them.
 */
export const SERVICE_CIDR = "198.18.0.0/16";
export const POD_CIDR = "198.19.0.0/16";
/** kwok's simulated pods take the lower half of POD_CIDR; their addresses are never dialled. */
export const KWOK_POD_CIDR = "198.19.0.0/17";
/** The real node's pods: the node's share of the upper half. */
export const NODE_POD_CIDR = "198.19.128.0/24";
export const NODE_POD_GATEWAY = "198.19.128.1";
/** The real node's own address, inside its namespace. */
export const NODE_IP = "192.0.2.10";
/** The `kubernetes` Service: the first address of SERVICE_CIDR, as the API server allocates it. */
export const KUBERNETES_SERVICE_IP = "198.18.0.1";
/** Cluster DNS (CoreDNS's Service). */
export const CLUSTER_DNS_IP = "198.18.0.10";
/** Where the node's pods reach the API server: a relay on the node's address (cluster/node/relay.ts). */
export const NODE_API_SERVER_PORT = 6443;
/**
 * The machine, as pods see it: cluster DNS answers NODE_IP for this name, and a relay on NODE_IP:<port>
 * (cluster/node/relay.ts exposeInside) leads to 127.0.0.1:<port> of the machine. Browsers resolve
 * every *.localhost name to 127.0.0.1 by themselves, so one URL (the local OpenID issuer) works
 * for pods and for any browser on the machine, with no DNS set-up.
 */
export const MACHINE_HOST = "host.userland.localhost";
/** A stand-in for a cloud's metadata endpoint, served inside the node namespace, never reachable from pods. */
export const METADATA_IP = "169.254.169.254";
