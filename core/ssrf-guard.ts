import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { GatehouseError } from './errors.ts';

/**
 * Keeps requests to URLs that API users supply (webhook endpoints, agents' tools) from reaching
 * the sidecar's own network (SSRF). An address is judged by what it reaches, not by how it is
 * written: IPv6 forms that carry an IPv4 address (IPv4-mapped, IPv4-compatible, SIIT, NAT64
 * 64:ff9b::/96, 6to4) are judged by that IPv4 address; only public unicast addresses pass
 * (ipaddr.js classifies them, and IPv6 must also be in 2000::/3, the only global unicast space
 * allocated). An allowlist of CIDRs, addresses or host names lets an operator permit what they
 * mean to (a receiver on the same host, an internal service).
 *
 * A URL is checked when it is configured and again on every connection: connections resolve
 * names through `lookup`, which refuses the connection if any answer is refused, so the address
 * connected to is always one that was checked, and a name that resolved to a public address at
 * configuration time and to a private one later (DNS rebinding) is refused without a second,
 * racy resolution.
 */
type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** dns.lookup with `all: true`; tests inject their own answers. */
export type Resolver = (hostname: string, options: LookupAllOptions, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

export interface GuardOptions {
  /** CIDRs (`10.1.0.0/16`), addresses (`127.0.0.1`) or host names (`hooks.internal`) let through. */
  allow: readonly string[];
  /** The setting operators extend `allow` with, named in refusals. */
  allowSetting: string;
  resolve?: Resolver;
}

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
// RFC 8215: where the IPv4 address sits depends on a prefix length only the operator's
// translator knows, so what it reaches cannot be told from the address.
const NAT64_LOCAL_USE = ipaddr.parseCIDR('64:ff9b:1::/48');
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

const systemResolve: Resolver = (hostname, options, callback) => dnsLookup(hostname, { ...options, all: true }, callback);

export class AddressGuard {
  private readonly allowedNets: Array<[Address, number]> = [];
  private readonly allowedHosts = new Set<string>();
  private readonly allowSetting: string;
  private readonly resolve: Resolver;

  constructor(options: GuardOptions) {
    this.allowSetting = options.allowSetting;
    this.resolve = options.resolve ?? systemResolve;
    for (const entry of options.allow) {
      const family = isIP(entry);
      const cidr = family === 0 ? entry : `${entry}/${family === 4 ? 32 : 128}`;
      if (ipaddr.isValidCIDR(cidr)) this.allowedNets.push(ipaddr.parseCIDR(cidr));
      else if (!entry.includes('/')) this.allowedHosts.add(entry.toLowerCase());
      else throw new Error(`${options.allowSetting}: ${entry} is not a CIDR`);
    }
  }

  /** Why `address` (an IP address) may not be reached, or null when it may. */
  refusal(address: string): string | null {
    if (!ipaddr.isValid(address)) return `${address} is not an IP address`;
    const parsed = ipaddr.parse(address);
    const { reaches, kind } = classify(parsed);
    if (kind === null || this.allowed(parsed) || (reaches !== parsed && this.allowed(reaches))) return null;
    const target = reaches === parsed ? address : `${address} (reaching ${reaches.toString()})`;
    return `${target} is not a public address (${kind}); allow it with ${this.allowSetting}`;
  }

  /**
   * Why a URL whose host is an IP address may not be reached, or null. Connections to an address
   * skip `lookup`, so senders ask this first; host names are judged by `lookup` as they connect.
   */
  literalRefusal(url: URL): string | null {
    const host = hostOf(url);
    return isIP(host) ? this.refusal(host) : null;
  }

  /**
   * Refuses a URL that is not http(s), carries credentials, or whose host resolves to an address
   * it may not reach: 400 `invalid_request` naming `path`, the body field the URL came in.
   */
  async check(url: URL, path: string): Promise<void> {
    const refused = (detail: string) => new GatehouseError('invalid_request', `URL refused: ${detail}`, { errors: [{ path, message: detail }] });
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refused(`${url.protocol} URLs are not supported; use http or https`);
    if (url.username || url.password) throw refused('the URL must not carry credentials');
    const host = hostOf(url);
    if (this.allowedHosts.has(host)) return;
    if (isIP(host)) {
      const why = this.refusal(host);
      if (why) throw refused(why);
      return;
    }
    const addresses = await this.resolveAll(host).catch((error: NodeJS.ErrnoException) => {
      throw refused(`${host} does not resolve (${error.code ?? error.message})`);
    });
    const why = this.answerRefusal(addresses);
    if (why) throw refused(`${host} resolves to ${why}`);
  }

  /**
   * A `lookup` for outgoing connections (net.connect, http agents, undici's `connect`): resolves
   * every address of the host and fails the connection if any of them is refused, unless the host
   * itself is allowed.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const why = this.allowedHosts.has(hostname.toLowerCase()) ? null : this.answerRefusal(addresses);
      if (why) return callback(Object.assign(new Error(`refused: ${hostname} resolves to ${why}`), { code: 'EADDRNOTALLOWED' }), '', 0);
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };

  private answerRefusal(addresses: LookupAddress[]): string | null {
    if (addresses.length === 0) return 'no address';
    for (const { address } of addresses) {
      const why = this.refusal(address);
      if (why) return why;
    }
    return null;
  }

  private allowed(address: Address): boolean {
    return this.allowedNets.some((net) => net[0].kind() === address.kind() && address.match(net));
  }

  private resolveAll(host: string): Promise<LookupAddress[]> {
    return new Promise((resolve, reject) => this.resolve(host, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))));
  }
}

/**
 * What an address reaches, and the kind of range that keeps it from being public (null when it
 * is public unicast).
 */
function classify(address: Address): { reaches: Address; kind: string | null } {
  if (address.kind() === 'ipv4') {
    const range = address.range();
    return { reaches: address, kind: range === 'unicast' ? null : range };
  }
  const v6 = address as ipaddr.IPv6;
  const range: string = v6.range();
  const embedded = (at: number) => {
    const v4 = new ipaddr.IPv4(v6.toByteArray().slice(at, at + 4));
    return { reaches: v4, kind: classify(v4).kind };
  };
  if (v6.match(NAT64_LOCAL_USE)) return { reaches: v6, kind: 'NAT64 local-use' };
  switch (range) {
    case 'ipv4Mapped':
    case 'rfc6145':
    case 'rfc6052':
      return embedded(12);
    case '6to4':
      return embedded(2);
    case 'unicast':
      if (v6.match(IPV4_COMPATIBLE)) return embedded(12);
      return { reaches: v6, kind: v6.match(GLOBAL_UNICAST_V6) ? null : 'outside global unicast 2000::/3' };
    default:
      return { reaches: v6, kind: range };
  }
}

/** The host of a URL without IPv6 brackets, lower case. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
}
