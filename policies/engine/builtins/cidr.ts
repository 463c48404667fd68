/**
 * Go's `net` address parsing, for `net.cidr_merge` (cidr-merge.ts): addresses are byte slices of
 * 4 or 16 bytes, `ParseIP` gives the 16-byte form, and an IPv4 CIDR keeps a 4-byte network and
 * mask. Parsing follows Go's `netip.ParseAddr` (no leading zeros in IPv4 fields, no zones). The
 * module's `net.cidr_contains` parses the same way (policies/runtime/assembly/builtins/cidr.ts).
 */

export type Bytes = Uint8Array;

export interface ParsedAddr {
  /** The 16-byte form (IPv4 as ::ffff:a.b.c.d), like `netip.Addr.As16`. */
  bytes16: Bytes;
  /** 32 for IPv4, 128 for IPv6 (IPv4-mapped IPv6 included), like `netip.Addr.BitLen`. */
  bitLen: 32 | 128;
}

export interface IPNet {
  ip: Bytes;
  mask: Bytes;
}

const V4_IN_V6_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

function parseIPv4Bytes(s: string): number[] | undefined {
  const fields = s.split('.');
  if (fields.length !== 4) return undefined;
  const out: number[] = [];
  for (const field of fields) {
    if (!/^[0-9]{1,3}$/.test(field) || (field.length > 1 && field[0] === '0')) return undefined;
    const n = Number(field);
    if (n > 255) return undefined;
    out.push(n);
  }
  return out;
}

function parseIPv6Bytes(s: string): Bytes | undefined {
  const out = new Uint8Array(16);
  let rest = s;
  let ellipsis = -1;
  let i = 0;
  if (rest.startsWith('::')) {
    ellipsis = 0;
    rest = rest.slice(2);
    if (rest === '') return out;
  }
  while (i < 16) {
    const hex = /^[0-9a-fA-F]{1,4}/.exec(rest);
    if (!hex) return undefined;
    if (rest[hex[0].length] === '.') {
      // An embedded IPv4 address fills the last four bytes.
      if (ellipsis < 0 && i !== 12) return undefined;
      if (i + 4 > 16) return undefined;
      const v4 = parseIPv4Bytes(rest);
      if (!v4) return undefined;
      out.set(v4, i);
      i += 4;
      rest = '';
      break;
    }
    const value = parseInt(hex[0], 16);
    out[i] = value >> 8;
    out[i + 1] = value & 0xff;
    i += 2;
    rest = rest.slice(hex[0].length);
    if (rest === '') break;
    if (rest[0] !== ':' || rest.length === 1) return undefined;
    rest = rest.slice(1);
    if (rest[0] === ':') {
      if (ellipsis >= 0) return undefined;
      ellipsis = i;
      rest = rest.slice(1);
      if (rest === '') break;
    }
  }
  if (rest !== '') return undefined;
  if (i < 16) {
    if (ellipsis < 0) return undefined;
    const shift = 16 - i;
    out.copyWithin(ellipsis + shift, ellipsis, i);
    out.fill(0, ellipsis, ellipsis + shift);
  } else if (ellipsis >= 0) {
    // `::` must stand for at least one group of zeros.
    return undefined;
  }
  return out;
}

/** Go's `netip.ParseAddr`, refusing zones as `net.ParseIP` does. */
export function parseAddr(s: string): ParsedAddr | undefined {
  for (const c of s) {
    if (c === '.') {
      const v4 = parseIPv4Bytes(s);
      return v4 ? { bytes16: Uint8Array.from([...V4_IN_V6_PREFIX, ...v4]), bitLen: 32 } : undefined;
    }
    if (c === ':') {
      const v6 = parseIPv6Bytes(s);
      return v6 ? { bytes16: v6, bitLen: 128 } : undefined;
    }
  }
  return undefined;
}

/** Go's `IP.To4`: the 4-byte form of an IPv4 or IPv4-mapped address, else undefined. */
export function to4(ip: Bytes): Bytes | undefined {
  if (ip.length === 4) return ip;
  if (ip.length === 16 && V4_IN_V6_PREFIX.every((b, i) => ip[i] === b)) return ip.subarray(12);
  return undefined;
}

function cidrMask(ones: number, bits: number): Bytes {
  const mask = new Uint8Array(bits / 8);
  for (let i = 0; i < mask.length; i++) {
    const take = Math.max(0, Math.min(8, ones - i * 8));
    mask[i] = (0xff << (8 - take)) & 0xff;
  }
  return mask;
}

/** Go's `IP.Mask`, including its IPv4/IPv6 length reconciliation. */
function applyMask(ip16: Bytes, mask: Bytes): Bytes {
  const ip = mask.length === 4 ? to4(ip16)! : ip16;
  return ip.map((b, i) => b & mask[i]!);
}

/** Go's `net.ParseCIDR`, returning the network. */
export function parseCIDR(s: string): IPNet | undefined {
  const slash = s.indexOf('/');
  if (slash < 0) return undefined;
  const addr = parseAddr(s.slice(0, slash));
  const prefix = s.slice(slash + 1);
  if (!addr || !/^[0-9]+$/.test(prefix)) return undefined;
  const ones = Number(prefix);
  if (ones > addr.bitLen) return undefined;
  const mask = cidrMask(ones, addr.bitLen);
  return { ip: applyMask(addr.bytes16, mask), mask };
}
