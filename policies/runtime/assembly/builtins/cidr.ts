// net.cidr_contains, net.cidr_intersects and net.cidr_is_valid, as OPA computes them with Go's
// `net` package. Addresses are parsed like Go's
// `netip.ParseAddr` (no leading zeros in IPv4 fields, no zones) into the 16-byte form, IPv4 as
// ::ffff:a.b.c.d. An IPv4 network keeps a 4-byte address and mask, and `IPNet.Contains` compares
// IPv4-mapped IPv6 addresses as IPv4.

import { Value, UNDEFINED, isString, stringData, stringLength, booleanValue } from "../value";

// Scratch space for one call: the outer network, the inner address or network, and the inner
// network's last address; each holds 4 or 16 bytes.
const NET_IP = memory.data(16);
const NET_MASK = memory.data(16);
const INNER_IP = memory.data(16);
const INNER_MASK = memory.data(16);
const INNER_LAST = memory.data(16);

/** The 12 bytes before an IPv4 address in its IPv4-mapped IPv6 form. */
const V4_IN_V6_PREFIX = memory.data<u8>([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);

// @ts-ignore: decorator
@inline
function isDigit(c: u32): bool {
  return c - 0x30 < 10;
}

/** The value of a hex digit, or -1. */
function hexValue(c: u32): i32 {
  if (c - 0x30 < 10) return <i32>(c - 0x30);
  const lower = c | 0x20;
  if (lower - 0x61 < 6) return <i32>(lower - 0x61 + 10);
  return -1;
}

/** Writes the four bytes of the dotted IPv4 address `p[0..len)` at `out`; false if it is not one. */
function parseIPv4(p: usize, len: i32, out: usize): bool {
  let field = 0;
  let i = 0;
  while (field < 4) {
    const start = i;
    let n = 0;
    while (i < len && isDigit(<u32>load<u8>(p + <usize>i))) {
      n = n * 10 + <i32>load<u8>(p + <usize>i) - 0x30;
      i++;
      if (i - start > 3) return false;
    }
    const digits = i - start;
    if (digits == 0 || n > 255 || (digits > 1 && load<u8>(p + <usize>start) == 0x30)) return false;
    store<u8>(out + <usize>field, <u8>n);
    field++;
    if (field < 4) {
      if (i >= len || load<u8>(p + <usize>i) != 0x2e) return false;
      i++;
    }
  }
  return i == len;
}

/** Writes the 16 bytes of the IPv6 address `p[0..len)` at `out`; false if it is not one. */
function parseIPv6(p: usize, len: i32, out: usize): bool {
  memory.fill(out, 0, 16);
  let at = 0;
  let filled = 0;
  let ellipsis = -1;
  if (len >= 2 && load<u8>(p) == 0x3a && load<u8>(p, 1) == 0x3a) {
    ellipsis = 0;
    at = 2;
    if (at == len) return true;
  }
  while (filled < 16) {
    let value = 0;
    let digits = 0;
    while (digits < 4 && at + digits < len) {
      const d = hexValue(<u32>load<u8>(p + <usize>(at + digits)));
      if (d < 0) break;
      value = (value << 4) | d;
      digits++;
    }
    if (digits == 0) return false;
    if (at + digits < len && load<u8>(p + <usize>(at + digits)) == 0x2e) {
      // An embedded IPv4 address fills the last four bytes.
      if ((ellipsis < 0 && filled != 12) || filled + 4 > 16) return false;
      if (!parseIPv4(p + <usize>at, len - at, out + <usize>filled)) return false;
      filled += 4;
      at = len;
      break;
    }
    store<u8>(out + <usize>filled, <u8>(value >> 8));
    store<u8>(out + <usize>filled, <u8>value, 1);
    filled += 2;
    at += digits;
    if (at == len) break;
    if (load<u8>(p + <usize>at) != 0x3a || at + 1 == len) return false;
    at++;
    if (load<u8>(p + <usize>at) == 0x3a) {
      if (ellipsis >= 0) return false;
      ellipsis = filled;
      at++;
      if (at == len) break;
    }
  }
  if (at != len) return false;
  if (filled < 16) {
    if (ellipsis < 0) return false;
    const shift = 16 - filled;
    memory.copy(out + <usize>(ellipsis + shift), out + <usize>ellipsis, <usize>(filled - ellipsis));
    memory.fill(out + <usize>ellipsis, 0, <usize>shift);
  } else if (ellipsis >= 0) {
    // `::` must stand for at least one group of zeros.
    return false;
  }
  return true;
}

/**
 * Go's `netip.ParseAddr` into the 16-byte form at `out`: the address's bit length (32 for IPv4,
 * 128 for IPv6, IPv4-mapped ones included), or 0 when the text is not an address.
 */
function parseAddr(p: usize, len: i32, out: usize): i32 {
  for (let i = 0; i < len; i++) {
    const c = load<u8>(p + <usize>i);
    if (c == 0x2e) {
      memory.copy(out, V4_IN_V6_PREFIX, 12);
      return parseIPv4(p, len, out + 12) ? 32 : 0;
    }
    if (c == 0x3a) return parseIPv6(p, len, out) ? 128 : 0;
  }
  return 0;
}

/** Byte length of the address `v4OrSelf` returned last. */
let formSize: i32 = 0;

/**
 * Go's `IP.To4` where it succeeds, else the address itself: the start of that form of the address
 * of `len` bytes at `ip`, its length left in `formSize`.
 */
function v4OrSelf(ip: usize, len: i32): usize {
  const mapped = len == 16 && memory.compare(ip, V4_IN_V6_PREFIX, 12) == 0;
  formSize = mapped ? 4 : len;
  return mapped ? ip + 12 : ip;
}

/**
 * Go's `net.ParseCIDR`: writes the network's address (masked) and mask at `ip` and `mask` and
 * returns their byte length, 4 for IPv4 and 16 for IPv6; 0 when the text is not a CIDR.
 */
function parseCIDR(p: usize, len: i32, ip: usize, mask: usize): i32 {
  let slash = 0;
  while (slash < len && load<u8>(p + <usize>slash) != 0x2f) slash++;
  if (slash == len) return 0;
  const bits = parseAddr(p, slash, ip);
  if (bits == 0 || slash + 1 == len) return 0;
  let ones = 0;
  for (let i = slash + 1; i < len; i++) {
    const c = <u32>load<u8>(p + <usize>i);
    if (!isDigit(c)) return 0;
    ones = min(ones * 10 + <i32>(c - 0x30), 1000);
  }
  if (ones > bits) return 0;
  const size = bits >> 3;
  // An IPv4 network keeps the 4-byte form of its address, as `IP.Mask` gives it.
  if (size == 4) memory.copy(ip, ip + 12, 4);
  for (let i = 0; i < size; i++) {
    const take: i32 = max<i32>(0, min<i32>(8, ones - i * 8));
    const m = <u8>((<i32>0xff << (8 - take)) & 0xff);
    store<u8>(mask + <usize>i, m);
    store<u8>(ip + <usize>i, load<u8>(ip + <usize>i) & m);
  }
  return size;
}

/**
 * Go's `IPNet.Contains` for the network at `netIp` and `netMask`, of `netSize` bytes, and an
 * address of `len` bytes.
 */
function contains(netIp: usize, netMask: usize, netSize: i32, candidate: usize, len: i32): bool {
  const nn = v4OrSelf(netIp, netSize);
  const nnSize = formSize;
  // A 16-byte mask over a network that is IPv4 after all applies its last four bytes.
  const mask = netMask + <usize>(netSize == 16 && nnSize == 4 ? 12 : 0);
  const ip = v4OrSelf(candidate, len);
  const ipSize = formSize;
  if (ipSize != nnSize) return false;
  for (let i = 0; i < ipSize; i++) {
    const m = load<u8>(mask + <usize>i);
    if ((load<u8>(ip + <usize>i) & m) != (load<u8>(nn + <usize>i) & m)) return false;
  }
  return true;
}

/**
 * Whether the network `cidr` contains the address or network `cidrOrIp` (a network when all of
 * it, up to its last address, lies inside). Undefined when either is not valid, as OPA reports an
 * error for those.
 */
export function bi_net_cidr_contains(cidr: Value, cidrOrIp: Value): Value {
  if (!isString(cidr) || !isString(cidrOrIp)) return UNDEFINED;
  const netSize = parseCIDR(stringData(cidr), stringLength(cidr), NET_IP, NET_MASK);
  if (netSize == 0) return UNDEFINED;
  const p = stringData(cidrOrIp);
  const len = stringLength(cidrOrIp);
  if (parseAddr(p, len, INNER_IP) != 0) return booleanValue(contains(NET_IP, NET_MASK, netSize, INNER_IP, 16));
  const innerSize = parseCIDR(p, len, INNER_IP, INNER_MASK);
  if (innerSize == 0) return UNDEFINED;
  for (let i = 0; i < innerSize; i++) {
    store<u8>(INNER_LAST + <usize>i, load<u8>(INNER_IP + <usize>i) | ~load<u8>(INNER_MASK + <usize>i));
  }
  return booleanValue(contains(NET_IP, NET_MASK, netSize, INNER_IP, innerSize) && contains(NET_IP, NET_MASK, netSize, INNER_LAST, innerSize));
}

/**
 * Whether the two networks share an address: as OPA decides it, whether either contains the
 * other's first address. Undefined when either is not a valid CIDR.
 */
export function bi_net_cidr_intersects(a: Value, b: Value): Value {
  if (!isString(a) || !isString(b)) return UNDEFINED;
  const aSize = parseCIDR(stringData(a), stringLength(a), NET_IP, NET_MASK);
  const bSize = parseCIDR(stringData(b), stringLength(b), INNER_IP, INNER_MASK);
  if (aSize == 0 || bSize == 0) return UNDEFINED;
  return booleanValue(contains(NET_IP, NET_MASK, aSize, INNER_IP, bSize) || contains(INNER_IP, INNER_MASK, bSize, NET_IP, aSize));
}

/** Whether the operand is a string Go's `net.ParseCIDR` accepts; false for any other operand. */
export function bi_net_cidr_is_valid(cidr: Value): Value {
  return booleanValue(isString(cidr) && parseCIDR(stringData(cidr), stringLength(cidr), NET_IP, NET_MASK) != 0);
}
