// net.cidr_contains, net.cidr_contains_matches, net.cidr_expand, net.cidr_intersects and
// net.cidr_is_valid, as OPA computes them with Go's `net` package. Addresses are parsed like Go's
// `netip.ParseAddr` (no leading zeros in IPv4 fields, no zones) into the 16-byte form, IPv4 as
// ::ffff:a.b.c.d. An IPv4 network keeps a 4-byte address and mask, and `IPNet.Contains` compares
// IPv4-mapped IPv6 addresses as IPv4.

import { abortWithMessage } from "../abort";
import {
  Value, UNDEFINED, TYPE_STRING, TYPE_ARRAY, TYPE_SET, TYPE_OBJECT,
  typeOf, isString, stringData, stringLength, booleanValue, booleanOf, intValue, newArray, arrayLength, arrayGet,
  arrayAppend, newSet, setAdd, collectionLength, collectionItems, objectKeyAt, objectValueAt, sortValues,
} from "../value";
import { output } from "./text-buffer";

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

/**
 * The network or address an element of `net.cidr_contains_matches`' operand stands for: a string
 * itself, or the first element of a non-empty array (a tuple carrying data along); 0 for any
 * other element, which OPA reports as an error.
 */
function matchTerm(element: Value): Value {
  const tag = typeOf(element);
  if (tag == TYPE_STRING) return element;
  if (tag == TYPE_ARRAY && arrayLength(element) > 0) return arrayGet(element, 0);
  return 0;
}

/**
 * Appends to `terms` and `keys` what each element of a `net.cidr_contains_matches` operand stands
 * for and the key the answer names it by: a string is its own key, an array element its index, a
 * set element itself and an object member its key. Any other operand holds none. False when an
 * element is neither a string nor a non-empty array.
 */
function matchOperand(operand: Value, terms: Value, keys: Value): bool {
  const tag = typeOf(operand);
  if (tag == TYPE_STRING) {
    arrayAppend(terms, operand);
    arrayAppend(keys, operand);
    return true;
  }
  if (tag != TYPE_ARRAY && tag != TYPE_SET && tag != TYPE_OBJECT) return true;
  const items = collectionItems(operand);
  for (let i = 0; i < collectionLength(operand); i++) {
    const element = tag == TYPE_OBJECT ? objectValueAt(operand, i) : load<Value>(items + (<usize>i << 2));
    const term = matchTerm(element);
    if (!term) return false;
    arrayAppend(terms, term);
    arrayAppend(keys, tag == TYPE_ARRAY ? intValue(i) : tag == TYPE_SET ? element : objectKeyAt(operand, i));
  }
  return true;
}

/**
 * The most pairs `net.cidr_contains_matches` compares: each is two CIDRs parsed (a million took
 * about 0.3 s here), and two arrays from a request would otherwise hold the event loop for
 * seconds; the iteration budget of a policy's own loops does not reach inside a builtin. More is
 * an abort, as a size budget is (numbers.ts).
 */
// @ts-ignore: decorator
@inline const MATCHES_MAX_PAIRS: i64 = 1000000;

/**
 * The set of `[key1, key2]` pairs for which the network named by `key1` in `cidrs` contains the
 * address or network named by `key2` in `cidrsOrIps` (see matchOperand), as OPA answers
 * `net.cidr_contains_matches`. Undefined where OPA reports an error: a malformed element, or a
 * pair `net.cidr_contains` is undefined for. As in OPA, the second operand's elements are only
 * looked at when the first has any.
 */
export function bi_net_cidr_contains_matches(cidrs: Value, cidrsOrIps: Value): Value {
  const outerTerms = newArray(0);
  const outerKeys = newArray(0);
  if (!matchOperand(cidrs, outerTerms, outerKeys)) return UNDEFINED;
  const matches = newSet(0);
  if (arrayLength(outerTerms) == 0) return matches;
  const innerTerms = newArray(0);
  const innerKeys = newArray(0);
  if (!matchOperand(cidrsOrIps, innerTerms, innerKeys)) return UNDEFINED;
  if (<i64>arrayLength(outerTerms) * <i64>arrayLength(innerTerms) > MATCHES_MAX_PAIRS) {
    abortWithMessage("size budget: net.cidr_contains_matches compares at most 1000000 pairs");
  }
  for (let i = 0; i < arrayLength(outerTerms); i++) {
    for (let j = 0; j < arrayLength(innerTerms); j++) {
      const contained = bi_net_cidr_contains(arrayGet(outerTerms, i), arrayGet(innerTerms, j));
      if (!contained) return UNDEFINED;
      if (!booleanOf(contained)) continue;
      const pair = newArray(2);
      arrayAppend(pair, arrayGet(outerKeys, i));
      arrayAppend(pair, arrayGet(innerKeys, j));
      setAdd(matches, pair);
    }
  }
  return matches;
}

/**
 * The most addresses `net.cidr_expand` lists, as many host bits as keep within `numbers.range`'s
 * budget of 100,000 elements. A larger network is an abort, not undefined, for the same reasons
 * (numbers.ts); OPA would list it until the evaluation is cancelled.
 */
// @ts-ignore: decorator
@inline const EXPAND_MAX_HOST_BITS: i32 = 16;

/** The number of zero bits in the `size`-byte mask at `mask`. */
function hostBits(mask: usize, size: i32): i32 {
  let ones = 0;
  for (let i = 0; i < size; i++) ones += <i32>popcnt<u32>(<u32>load<u8>(mask + <usize>i));
  return size * 8 - ones;
}

/** Adds one to the big-endian address of `size` bytes at `ip`, as OPA's incIP does. */
function incrementAddress(ip: usize, size: i32): void {
  for (let i = size - 1; i >= 0; i--) {
    const b = <u8>(load<u8>(ip + <usize>i) + 1);
    store<u8>(ip + <usize>i, b);
    if (b != 0) return;
  }
}

/** Writes the four bytes at `ip` in dotted decimal. */
function writeDotted(ip: usize): void {
  for (let i = 0; i < 4; i++) {
    if (i > 0) output.byte(0x2e);
    output.unsignedDecimal(<u64>load<u8>(ip + <usize>i));
  }
}

/** Writes `v` in lower-case hexadecimal without leading zeros. */
function writeHex16(v: u32): void {
  let shift = 12;
  while (shift > 0 && (v >> shift) == 0) shift -= 4;
  for (; shift >= 0; shift -= 4) {
    const d = (v >> shift) & 15;
    output.byte(d < 10 ? 0x30 + d : 0x57 + d);
  }
}

/**
 * Writes the 16-byte IPv6 address at `ip` as Go's netip does: groups in hexadecimal, the first
 * longest run of two or more zero groups written `::`.
 */
function writeIPv6(ip: usize): void {
  let zeroStart = -1;
  let zeroLength = 1;
  for (let i = 0; i < 8; i++) {
    let j = i;
    while (j < 8 && load<u16>(ip + <usize>(j << 1)) == 0) j++;
    if (j - i > zeroLength) {
      zeroStart = i;
      zeroLength = j - i;
    }
  }
  for (let i = 0; i < 8; i++) {
    if (i == zeroStart) {
      output.byte(0x3a);
      output.byte(0x3a);
      i += zeroLength - 1;
      continue;
    }
    if (i > 0 && i != zeroStart + zeroLength) output.byte(0x3a);
    writeHex16((<u32>load<u8>(ip + <usize>(i << 1)) << 8) | <u32>load<u8>(ip + <usize>(i << 1), 1));
  }
}

/** The text Go's `IP.String` gives the address of `size` bytes at `ip`: IPv4 (mapped too) dotted. */
function addressText(ip: usize, size: i32): Value {
  output.begin();
  const form = v4OrSelf(ip, size);
  if (formSize == 4) writeDotted(form);
  else writeIPv6(ip);
  return output.toStringCopy();
}

/**
 * The set of every address in the network `cidr`, as text, as OPA's `net.cidr_expand` lists them.
 * Undefined when `cidr` is not a valid CIDR; a network of more than 2^16 addresses aborts the
 * evaluation (the `size budget: ` prefix, as numbers.range).
 */
export function bi_net_cidr_expand(cidr: Value): Value {
  if (!isString(cidr)) return UNDEFINED;
  const size = parseCIDR(stringData(cidr), stringLength(cidr), NET_IP, NET_MASK);
  if (size == 0) return UNDEFINED;
  const bits = hostBits(NET_MASK, size);
  if (bits > EXPAND_MAX_HOST_BITS) abortWithMessage("size budget: net.cidr_expand builds at most 65536 elements");
  const count = 1 << bits;
  // Sorted first, the texts join the set at its end; added in address order each could move
  // most of the set ("10.0.0.10" sorts before "10.0.0.2").
  const texts = newArray(count);
  for (let i = 0; i < count; i++) {
    arrayAppend(texts, addressText(NET_IP, size));
    incrementAddress(NET_IP, size);
  }
  sortValues(collectionItems(texts), count);
  const addresses = newSet(count);
  for (let i = 0; i < count; i++) setAdd(addresses, arrayGet(texts, i));
  return addresses;
}
