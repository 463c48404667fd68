/**
 * OPA's `net.cidr_merge`: addresses and networks merged into the fewest CIDRs. Every network is a
 * range of one 128-bit space (IPv4 as ::ffff:a.b.c.d, as OPA's merge sees it); ranges that
 * overlap or touch are joined and written as the aligned blocks covering them, and a network
 * joined with nothing is written as it was given, which for an address is the address with its
 * classful mask (`10.1.2.3` is `10.1.2.3/8`).
 */
import { parseAddr, parseCIDR, to4, type Bytes } from './cidr.ts';

interface Range {
  first: bigint;
  last: bigint;
  /** How the network prints while no other range has joined it (Go's `IPNet.String`). */
  text?: string;
}

const V4_BASE = 0xffffn << 32n;
const ALL_ONES = (1n << 128n) - 1n;

function toBigInt(bytes: Bytes): bigint {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  return n;
}

/** Go's IPv6 text: hex groups without leading zeros, the first longest run of two or more zero groups as `::`. */
function ipv6Text(n: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => Number((n >> BigInt(112 - 16 * i)) & 0xffffn));
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j === i ? i + 1 : j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

/** A network of the 128-bit space as Go prints it: IPv4 when it lies in the IPv4 part. */
function networkText(first: bigint, prefix: number): string {
  if (prefix >= 96 && first >> 32n === 0xffffn) {
    const v4 = Number(first & 0xffffffffn);
    return `${[24, 16, 8, 0].map((s) => (v4 >>> s) & 0xff).join('.')}/${prefix - 96}`;
  }
  return `${ipv6Text(first)}/${prefix}`;
}

function rangeOf(network: bigint, prefix: number): Range {
  const hostBits = BigInt(128 - prefix);
  const first = (network >> hostBits) << hostBits;
  return { first, last: first | ((1n << hostBits) - 1n) };
}

/**
 * The range of one element: an IPv4 address (with its classful mask, as Go's `DefaultMask`
 * gives it) or a CIDR. An IPv6 address without a prefix, or anything else, is undefined.
 */
function elementRange(s: string): Range | undefined {
  const addr = parseAddr(s);
  if (addr) {
    const v4 = to4(addr.bytes16);
    if (!v4) return undefined;
    const ones = v4[0]! < 0x80 ? 8 : v4[0]! < 0xc0 ? 16 : 24;
    return { ...rangeOf(toBigInt(addr.bytes16), 96 + ones), text: `${v4.join('.')}/${ones}` };
  }
  const net = parseCIDR(s);
  if (!net) return undefined;
  const ones = net.mask.reduce((n, b) => n + b.toString(2).replace(/0/g, '').length, 0);
  const network = net.ip.length === 4 ? V4_BASE | toBigInt(net.ip) : toBigInt(net.ip);
  const prefix = net.ip.length === 4 ? 96 + ones : ones;
  return { ...rangeOf(network, prefix), text: networkText(network, prefix) };
}

/** The aligned blocks covering [first, last], each as large as it can be. */
function blocks(first: bigint, last: bigint): string[] {
  const out: string[] = [];
  let start = first;
  while (start <= last) {
    let size = 0;
    while (size < 128) {
      const next = size + 1;
      const mask = (1n << BigInt(next)) - 1n;
      if ((start & mask) !== 0n || (start | mask) > last) break;
      size = next;
    }
    out.push(networkText(start, 128 - size));
    const end = start | ((1n << BigInt(size)) - 1n);
    if (end === ALL_ONES) break;
    start = end + 1n;
  }
  return out;
}

/**
 * `net.cidr_merge(addrs)`: the merged networks, or undefined when an element is not a string
 * holding an IPv4 address or a CIDR. A set operand arrives as an array.
 */
export function cidrMerge(addrs: unknown[]): string[] | undefined {
  const ranges: Range[] = [];
  for (const element of addrs) {
    const range = typeof element === 'string' ? elementRange(element) : undefined;
    if (!range) return undefined;
    ranges.push(range);
  }
  ranges.sort((a, b) => (a.last < b.last ? -1 : a.last > b.last ? 1 : 0));
  // Walking down from the highest, a range joins the one below when it starts at most one
  // address after that one ends (OPA's `mergeCIDRs`; the lowest address of either family has
  // no predecessor).
  for (let i = ranges.length - 1; i > 0; i--) {
    const current = ranges[i]!;
    const below = ranges[i - 1]!;
    const previous = current.first === 0n || current.first === V4_BASE ? current.first : current.first - 1n;
    if (previous <= below.last) {
      ranges[i - 1] = { first: below.first < current.first ? below.first : current.first, last: current.last };
      ranges.splice(i, 1);
    }
  }
  return [...new Set(ranges.flatMap((r) => (r.text !== undefined ? [r.text] : blocks(r.first, r.last))))];
}
