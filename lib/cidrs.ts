/**
 * Address ranges as settings give them (`10.0.0.0/8,fd00::/8`; a bare address is just itself), and
 * whether an address is in them: the proxy's trusted proxies, the operator's check of the pod range
 * the chart's NetworkPolicies were rendered for.
 */
import { BlockList, isIP } from "node:net";

export function splitCidr(cidr: string): { address: string; prefix: number; type: "ipv4" | "ipv6" } {
  const [address = "", bits, ...rest] = cidr.split("/");
  const version = isIP(address);
  if (version === 0 || rest.length > 0)
    throw new Error(`"${cidr}" is not a CIDR such as 10.0.0.0/8 or fd00::/8`);
  const max = version === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : Number(bits);
  if (
    !Number.isInteger(prefix) ||
    prefix < 0 ||
    prefix > max ||
    (bits !== undefined && !/^\d+$/.test(bits))
  ) {
    throw new Error(`"${cidr}": the prefix length must be 0 to ${max}`);
  }
  return { address, prefix, type: version === 4 ? "ipv4" : "ipv6" };
}

/** Validates a comma-separated CIDR list (a bare address means just that address). */
export function cidrList(raw: string): string[] {
  const list = raw
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  list.forEach(splitCidr);
  return list;
}

/** "::ffff:10.1.2.3" (how a dual-stack socket reports an IPv4 peer) → "10.1.2.3". */
export function plainAddress(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped?.[1] ?? address;
}

export interface AddressSet {
  /** Whether `address` is in one of the ranges (never for none, or for what is no address). */
  has(address: string | undefined): boolean;
}

export function addressSet(cidrs: readonly string[]): AddressSet {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const { address, prefix, type } = splitCidr(cidr);
    list.addSubnet(address, prefix, type);
  }
  return {
    has(address) {
      if (!address || cidrs.length === 0) return false;
      const plain = plainAddress(address);
      const version = isIP(plain);
      return version !== 0 && list.check(plain, version === 4 ? "ipv4" : "ipv6");
    },
  };
}
