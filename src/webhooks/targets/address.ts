import { promises as dns } from "node:dns";
import net from "node:net";
import ipaddr from "ipaddr.js";

// Keeps webhooks (every type) from reaching internal services: a target must resolve only to public
// unicast addresses unless WEBHOOK_ALLOW_PRIVATE=true. Checked at creation and update (400) and
// again before every connection: the sender resolves the name once, checks every address, and
// connects to the checked address itself (see sender.ts), so no later resolution can slip in.
// Refusals never say what a name resolved to.

/** IPv6 global unicast (2000::/3). Everything outside it (IPv4-compatible ::/96, NAT64, ULA, link-local...) is refused. */
const IPV6_GLOBAL = ipaddr.parseCIDR("2000::/3") as [ipaddr.IPv6, number];

/** ipaddr.js range of an address, after unmapping ::ffff:a.b.c.d ("invalid" for a non-literal). */
export function addressRange(address: string): string {
  return net.isIP(address) ? ipaddr.process(address).range() : "invalid";
}

/** True only for a public unicast address: not loopback, private, link-local, unique-local, CGNAT,
 * multicast, unspecified, broadcast, documentation, benchmarking, reserved, NAT64, 6to4, Teredo,
 * IPv4-compatible or IPv4-mapped forms of any of these, nor an address with a zone id. */
export function isPublicAddress(address: string): boolean {
  // net.isIP: only canonical literals (ipaddr.js would also take "0x7f.1"); no zone ids.
  if (!net.isIP(address) || address.includes("%")) return false;
  const ip = ipaddr.process(address); // ::ffff:a.b.c.d → a.b.c.d
  if (ip.range() !== "unicast") return false;
  return ip.kind() === "ipv4" || (ip as ipaddr.IPv6).match(IPV6_GLOBAL);
}

/** A target the address rule does not allow. The message names neither the host nor its addresses. */
export class BlockedAddressError extends Error {
  readonly code = "EWEBHOOKBLOCKED";
  constructor() {
    // Says how to allow it: the operator's setting (docs/operations.md), not what the name resolved to.
    super(
      "target not allowed: webhook URLs must resolve only to public addresses " +
        "(the server's operator can allow such targets with WEBHOOK_ALLOW_PRIVATE=true)",
    );
  }
}

/** The name could not be resolved (no address, or a DNS failure). */
export class UnresolvedHostError extends Error {
  readonly code = "EWEBHOOKUNRESOLVED";
  constructor() {
    super("host could not be resolved");
  }
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a name to all its addresses. The sender takes one as a dependency (tests pass their own). */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (host) =>
  (await dns.lookup(host, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

/** Hostname of a URL without IPv6 brackets. */
export function urlHost(u: URL): string {
  return u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
}

/**
 * Resolves `host` (an IP literal is its own answer) and, unless `allowPrivate`, checks every address.
 * Returns the checked addresses, in the resolver's order: the caller connects to them, not to the name.
 */
export async function pinTarget(
  host: string,
  opts: { allowPrivate: boolean; resolve: Resolver },
): Promise<ResolvedAddress[]> {
  let addrs: ResolvedAddress[];
  const literal = net.isIP(host);
  if (literal) addrs = [{ address: host, family: literal === 6 ? 6 : 4 }];
  else {
    try {
      addrs = await opts.resolve(host);
    } catch {
      throw new UnresolvedHostError();
    }
  }
  // Only IP literals may come back: the sender connects to the string as is, without a lookup.
  if (addrs.length === 0 || !addrs.every((a) => net.isIP(a.address))) throw new UnresolvedHostError();
  if (!opts.allowPrivate && !addrs.every((a) => isPublicAddress(a.address))) throw new BlockedAddressError();
  return addrs;
}
