import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { GatehouseError } from '../errors.ts';

/**
 * Keeps webhooks from being aimed at the sidecar's own network (SSRF). A URL is refused when its
 * host resolves to any address that is not publicly routable: loopback, private (RFC 1918,
 * fc00::/7), link-local (including the 169.254.169.254 cloud metadata service), unspecified,
 * CGNAT, multicast, reserved or documentation ranges. An allowlist of CIDRs, addresses or host
 * names lets an operator permit what they mean to (a receiver on the same host, an internal
 * service).
 *
 * Checked when an endpoint is configured and again on every connection: the dispatcher's
 * connections resolve through `lookup`, which refuses a blocked answer, so a name that resolved
 * to a public address at configuration time and to a private one later (DNS rebinding) is
 * refused at delivery without a second, racy resolution.
 */
const BLOCKED: Array<[string, number, 'ipv4' | 'ipv6']> = [
  ['0.0.0.0', 8, 'ipv4'], // "this network", unspecified
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'], // CGNAT
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'], // link-local, cloud metadata
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'], // IETF protocol assignments
  ['192.0.2.0', 24, 'ipv4'], // documentation
  ['192.88.99.0', 24, 'ipv4'], // 6to4 relay
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'], // benchmarking
  ['198.51.100.0', 24, 'ipv4'], // documentation
  ['203.0.113.0', 24, 'ipv4'], // documentation
  ['224.0.0.0', 4, 'ipv4'], // multicast
  ['240.0.0.0', 4, 'ipv4'], // reserved, broadcast
  ['::', 128, 'ipv6'], // unspecified
  ['::1', 128, 'ipv6'], // loopback
  ['64:ff9b::', 96, 'ipv6'], // NAT64: reaches IPv4 space the IPv4 rules cannot see
  ['100::', 64, 'ipv6'], // discard
  ['2001:db8::', 32, 'ipv6'], // documentation
  ['fc00::', 7, 'ipv6'], // unique local
  ['fe80::', 10, 'ipv6'], // link-local
  ['ff00::', 8, 'ipv6'], // multicast
];

const V4_MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

export class AddressGuard {
  private readonly blocked = new BlockList();
  private readonly allowedNets = new BlockList();
  private readonly allowedHosts = new Set<string>();

  /** `allow`: CIDRs (`10.1.0.0/16`), addresses (`127.0.0.1`) or host names (`hooks.internal`). */
  constructor(allow: readonly string[] = []) {
    for (const [net, prefix, type] of BLOCKED) this.blocked.addSubnet(net, prefix, type);
    for (const entry of allow) {
      const [address, prefix] = entry.split('/');
      const family = isIP(address!);
      if (family && prefix !== undefined) this.allowedNets.addSubnet(address!, Number(prefix), family === 4 ? 'ipv4' : 'ipv6');
      else if (family) this.allowedNets.addAddress(address!, family === 4 ? 'ipv4' : 'ipv6');
      else this.allowedHosts.add(entry.toLowerCase());
    }
  }

  /** Why `address` may not be reached, or null when it may. */
  refusal(address: string): string | null {
    const mapped = V4_MAPPED.exec(address)?.[1];
    const plain = mapped ?? address;
    const type = isIP(plain) === 4 ? 'ipv4' : 'ipv6';
    if (this.allowedNets.check(plain, type) || !this.blocked.check(plain, type)) return null;
    return `${address} is not a public address (loopback, private, link-local, metadata or reserved); allow it with GATEHOUSE_WEBHOOK_ALLOW`;
  }

  /** Refuses a URL that is not http(s) or whose host resolves to an address it may not reach. */
  async check(url: URL): Promise<void> {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refused(`${url.protocol} URLs are not supported; use http or https`);
    if (url.username || url.password) throw refused('the URL must not carry credentials');
    const host = hostOf(url);
    if (this.allowedHosts.has(host)) return;
    const addresses = isIP(host) ? [host] : await resolveAll(host);
    for (const address of addresses) {
      const why = this.refusal(address);
      if (why) throw refused(`${url.host} resolves to ${why}`);
    }
  }

  /**
   * A `lookup` for outgoing connections: resolves every address of the host and fails the
   * connection if any of them is refused, unless the host itself is allowed.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      if (!this.allowedHosts.has(hostname.toLowerCase())) {
        for (const { address } of addresses) {
          const why = this.refusal(address);
          if (why) return callback(Object.assign(new Error(`refused: ${hostname} resolves to ${why}`), { code: 'EADDRNOTALLOWED' }), '', 0);
        }
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** The host of a URL without IPv6 brackets, lower case. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
}

function resolveAll(host: string): Promise<string[]> {
  return new Promise((resolve, reject) =>
    dnsLookup(host, { all: true }, (error, addresses) =>
      error ? reject(refused(`${host} does not resolve (${error.code ?? error.message})`)) : resolve(addresses.map((a) => a.address)),
    ),
  );
}

function refused(detail: string): GatehouseError {
  return new GatehouseError('invalid_request', `webhook URL refused: ${detail}`, { errors: [{ path: 'body/url', message: detail }] });
}
