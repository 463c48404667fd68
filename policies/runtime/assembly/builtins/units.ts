// units.parse_bytes, units.parse: a decimal amount followed by an SI (powers of 1000) or IEC
// (powers of 1024) unit, computed exactly on the amount's decimal digits, then truncated to an
// integer (parse_bytes) or kept exact when whole (parse). The amount times the unit is a digit
// string times an integer below 2^61, and dividing by the power of ten of its fraction drops
// digits, so no big-number arithmetic is needed.

import { Value, UNDEFINED, isString, stringData, stringLength, parseJSON, stringCopy, writtenFloatValue } from "../value";
import { parseDecimal } from "../float-parse";
import { output, piece, scratch } from "./text-buffer";

/** The unit prefixes kilo to exa, lower-case: the n-th multiplies by 1000^n or 1024^n. */
const PREFIXES = memory.data<u8>([0x6b, 0x6d, 0x67, 0x74, 0x70, 0x65]);

/** U+212A KELVIN SIGN, whose lower case is the ASCII `k`. */
// @ts-ignore: decorator
@inline const KELVIN: i32 = 0x212a;

// What `readAmount` found: how many of the amount's digits follow the point, and where the unit
// starts in `scratch`.
let scale: i32 = 0;
let unitAt: i32 = 0;

// @ts-ignore: decorator
@inline
function isDigit(c: i32): bool {
  return c >= 0x30 && c <= 0x39;
}

/** The code point at `p` (before `end`) lower-cased as far as units care: ASCII letters and the Kelvin sign. */
function lowerAt(p: usize, end: usize): i32 {
  const c = <i32>load<u8>(p);
  if (c >= 0x41 && c <= 0x5a) return c | 0x20;
  if (c == 0xe2 && p + 3 <= end && load<u8>(p, 1) == 0x84 && load<u8>(p, 2) == 0xaa) return 0x6b;
  return c;
}

/** The bytes of a prefix `lowerAt` accepted: three for the Kelvin sign, else one. */
// @ts-ignore: decorator
@inline
function prefixSize(p: usize): usize {
  return load<u8>(p) == 0xe2 ? 3 : 1;
}

/**
 * Reads text as OPA does before looking at the unit: quotes dropped, a space refused, the amount
 * everything before the first byte that is neither a digit nor `.`, written `12`, `1.5`, `.5` or
 * `5.`. The text without quotes is left in `scratch`, the amount's digits in `output`.
 */
function readAmount(s: Value): bool {
  const data = stringData(s);
  const len = stringLength(s);
  scratch.begin();
  for (let i = 0; i < len; i++) {
    const c = <i32>load<u8>(data + <usize>i);
    if (c == 0x20) return false;
    if (c != 0x22) scratch.byte(c);
  }
  output.begin();
  let points = 0;
  scale = 0;
  let at = 0;
  for (; at < scratch.len; at++) {
    const c = <i32>load<u8>(scratch.data + <usize>at);
    if (c == 0x2e) {
      points++;
    } else if (isDigit(c)) {
      output.byte(c);
      if (points > 0) scale++;
    } else {
      break;
    }
  }
  unitAt = at;
  return points <= 1 && output.len > 0;
}

/** The index in PREFIXES of a lower-case prefix, plus one; 0 if it is none. */
function prefixPower(c: i32): i32 {
  for (let i = 0; i < 6; i++) if (<i32>load<u8>(PREFIXES + <usize>i) == c) return i + 1;
  return 0;
}

/** 1000^power, or 1024^power if `iec`. */
function multiplier(power: i32, iec: bool): u64 {
  let m: u64 = 1;
  for (let i = 0; i < power; i++) m *= iec ? 1024 : 1000;
  return m;
}

/**
 * Multiplies the amount's digits in `output` by `m` (below 2^61, so a digit times it plus the
 * carry fits 64 bits); the product's digits, without leading zeros, replace them in `output`.
 */
function multiplyDigits(m: u64): void {
  const digits = output.data;
  const n = output.len;
  piece.begin();
  let carry: u64 = 0;
  for (let i = n - 1; i >= 0; i--) {
    const product = <u64>(load<u8>(digits + <usize>i) - 0x30) * m + carry;
    piece.byte(<i32>(product % 10) + 0x30);
    carry = product / 10;
  }
  for (; carry > 0; carry /= 10) piece.byte(<i32>(carry % 10) + 0x30);
  let top = piece.len;
  while (top > 1 && load<u8>(piece.data + <usize>(top - 1)) == 0x30) top--;
  output.begin();
  for (let i = top - 1; i >= 0; i--) output.byte(<i32>load<u8>(piece.data + <usize>i));
}

/** The integer whose decimal digits are the first `n` in `output` ("0" when there are none). */
function integerOfDigits(n: i32): Value {
  if (n <= 0) {
    output.begin();
    output.byte(0x30);
    n = 1;
  }
  // JSON text, so that integers beyond 64 bits stay exact; a heap copy, as the value keeps it.
  const text = stringCopy(output.data, n);
  return parseJSON(stringData(text), n);
}

/** `units.parse_bytes(s)`: bytes, truncated towards zero; units are case-insensitive. */
export function bi_units_parse_bytes(s: Value): Value {
  if (!isString(s) || !readAmount(s)) return UNDEFINED;
  const end = scratch.data + <usize>scratch.len;
  let p = scratch.data + <usize>unitAt;
  let power = 0;
  let iec = false;
  if (p < end) {
    power = prefixPower(lowerAt(p, end));
    if (power == 0) return UNDEFINED;
    p += prefixSize(p);
    if (p < end && lowerAt(p, end) == 0x69) {
      iec = true;
      p++;
    }
    if (p < end && lowerAt(p, end) == 0x62) p++;
    if (p < end) return UNDEFINED;
  }
  multiplyDigits(multiplier(power, iec));
  return integerOfDigits(output.len - scale);
}

/**
 * `units.parse(s)`: as OPA reads the unit, its first letter keeps its case (`m` is milli, `M`
 * mega), the rest is lower-cased; `k`, `K`, `Ki`, `ki`, …, `E`, `Ei` (not `b`/`B`). Whole results
 * are exact integers; others are, as OPA gives them (`big.Rat.FloatString(10)`), rounded to ten
 * decimals, half away from zero, then read as the nearest f64.
 */
export function bi_units_parse(s: Value): Value {
  if (!isString(s) || !readAmount(s)) return UNDEFINED;
  const end = scratch.data + <usize>scratch.len;
  let p = scratch.data + <usize>unitAt;
  let decimals = scale;
  let power = 0;
  let iec = false;
  if (p + 1 == end && load<u8>(p) == 0x6d) {
    decimals += 3;
  } else if (p < end) {
    power = prefixPower(lowerAt(p, end));
    if (power == 0) return UNDEFINED;
    p += prefixSize(p);
    iec = p < end && lowerAt(p, end) == 0x69;
    if (iec) p++;
    if (p < end) return UNDEFINED;
  }
  multiplyDigits(multiplier(power, iec));
  const n = output.len;
  let whole = true;
  for (let i = max(n - decimals, 0); i < n && whole; i++) whole = load<u8>(output.data + <usize>i) == 0x30;
  if (whole) return integerOfDigits(n - decimals);
  return tenDecimals(n - decimals, decimals);
}

/** Decimals `big.Rat.FloatString` keeps in OPA's `units.parse`. */
// @ts-ignore: decorator
@inline const UNITS_DECIMALS: i32 = 10;

/**
 * The number whose digits are those in `output`, the last `decimals` of them after the point
 * (`whole` before it, which may be 0 or less), rounded to UNITS_DECIMALS decimals half away from
 * zero.
 */
/** Digit `i` of `output` led by `pad` zeros. */
function paddedDigit(i: i32, pad: i32): i32 {
  return i < pad ? 0x30 : <i32>load<u8>(output.data + <usize>(i - pad));
}

function tenDecimals(whole: i32, decimals: i32): Value {
  const kept = min(decimals, UNITS_DECIMALS);
  // The digits as if led by enough zeros for one before the point: `pad` of them.
  const pad = max(1 - whole, 0);
  const count = whole + pad + kept;
  // The kept digits in `piece`, after a 0 for a carry out of the top.
  piece.begin();
  piece.byte(0x30);
  for (let i = 0; i < count; i++) piece.byte(paddedDigit(i, pad));
  if (decimals > kept && paddedDigit(count, pad) >= 0x35) {
    for (let i = piece.len - 1; i >= 0; i--) {
      const digit = load<u8>(piece.data + <usize>i);
      store<u8>(piece.data + <usize>i, digit == 0x39 ? 0x30 : digit + 1);
      if (digit != 0x39) break;
    }
  }
  // As FloatString writes it: the integer part without leading zeros ("0" at least), then
  // exactly UNITS_DECIMALS decimals; the number keeps that text, as OPA's does.
  const point = piece.len - kept;
  let first = 0;
  while (first < point - 1 && load<u8>(piece.data + <usize>first) == 0x30) first++;
  scratch.begin();
  for (let i = first; i < piece.len; i++) {
    if (i == point) scratch.byte(0x2e);
    scratch.byte(<i32>load<u8>(piece.data + <usize>i));
  }
  for (let i = kept; i < UNITS_DECIMALS; i++) scratch.byte(0x30);
  const text = scratch.toStringCopy();
  return writtenFloatValue(parseDecimal(stringData(text), stringLength(text)), stringData(text), stringLength(text));
}
