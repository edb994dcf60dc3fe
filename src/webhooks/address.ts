import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { promises as dns } from "node:dns";
import net from "node:net";
import ipaddr from "ipaddr.js";

// Keeps webhooks from reaching internal services: a target must resolve only to public unicast
// addresses. Checked at creation (400) and again when connecting: the request's `lookup` checks
// every resolved address and pins the connection to the checked one (no DNS rebinding window).

/** ipaddr.js range of an address ("unicast" is the only public one), after unmapping ::ffff:a.b.c.d. */
export function addressRange(address: string): string {
  if (!ipaddr.isValid(address)) return "invalid";
  return ipaddr.process(address).range();
}

/** Loopback, private, link-local, unique-local, CGNAT, multicast, unspecified, reserved, NAT64, 6to4... */
export function isPublicAddress(address: string): boolean {
  return addressRange(address) === "unicast";
}

export class BlockedAddressError extends Error {
  readonly code = "EWEBHOOKBLOCKED";
  constructor(host: string, address: string) {
    super(`refused: ${host} resolves to ${address} (${addressRange(address)}), not a public address`);
  }
}

/** Hostname of a URL without IPv6 brackets. */
export function urlHost(u: URL): string {
  return u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
}

/** Resolves a target host; throws BlockedAddressError for any non-public address. */
export async function checkTargetHost(host: string): Promise<string[]> {
  const addrs = net.isIP(host) ? [host] : (await dns.lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  for (const a of addrs) if (!isPublicAddress(a)) throw new BlockedAddressError(host, a);
  return addrs;
}

type LookupCb = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request that refuses non-public addresses. Node does not call `lookup` for IP
 * literals, so the sender checks those itself before connecting (see sender.ts).
 */
export function safeLookup(hostname: string, options: { all?: boolean; family?: number | string } | number, cb: LookupCb): void {
  dnsLookup(hostname, { all: true, verbatim: true }, (err, addrs) => {
    if (err) return cb(err, "");
    const list = addrs as LookupAddress[];
    const bad = list.find((a) => !isPublicAddress(a.address));
    if (bad) return cb(new BlockedAddressError(hostname, bad.address) as unknown as NodeJS.ErrnoException, "");
    if (list.length === 0) return cb(Object.assign(new Error(`no address for ${hostname}`), { code: "ENOTFOUND" }), "");
    const wantAll = typeof options === "object" && options.all;
    if (wantAll) return cb(null, list);
    cb(null, list[0].address, list[0].family);
  });
}
