// JSON text to values, in one pass over the bytes.
//
// Strings without escapes are not copied: the value points into the JSON text, which therefore
// must stay in place as long as the value is used (true of the input the host writes below the
// heap pointer, of data segments, and of anything allocated on the heap before it).

import { compareBytes } from "./compare";
import { parseDecimal } from "./float-parse";
import { alloc } from "./heap";
import {
  Value, UNDEFINED, NULL_VALUE, TRUE_VALUE, FALSE_VALUE, StringValue, CollectionValue,
  intValue, writtenFloatValue, bigIntegerValue, stringValue,
  newArray, arrayAppend, newObject, objectInsert,
} from "./value";

// Nesting beyond this is refused rather than risking the native stack.
// @ts-ignore: decorator
@inline const MAX_DEPTH: i32 = 2048;

// Objects up to this size place each member by scanning back from the last key (see addMember);
// larger ones go through objectInsert's bisection.
// @ts-ignore: decorator
@inline const LINEAR_INSERT_MAX: i32 = 8;

// "true", "fals", "null" as little-endian u32 words.
// @ts-ignore: decorator
@inline const WORD_TRUE: u32 = 0x65757274;
// @ts-ignore: decorator
@inline const WORD_FALS: u32 = 0x736c6166;
// @ts-ignore: decorator
@inline const WORD_NULL: u32 = 0x6c6c756e;

// Exact powers of ten for the fast float path.
const POW10 = memory.data<f64>([
  1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
  1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
]);

let pos: usize = 0;
let end: usize = 0;
let depth: i32 = 0;

/** Parses the JSON text of `len` bytes at `ptr`; 0 if it is not valid JSON. */
export function parseJSON(ptr: usize, len: i32): Value {
  pos = ptr;
  end = ptr + <usize>len;
  depth = 0;
  const v = parseValue();
  if (!v) return UNDEFINED;
  skipWhitespace();
  return pos == end ? v : UNDEFINED;
}

// @ts-ignore: decorator
@inline
function skipWhitespace(): void {
  let p = pos;
  while (p < end) {
    const c = load<u8>(p);
    if (c > 0x20 || (c != 0x20 && c != 0x0a && c != 0x0d && c != 0x09)) break;
    p++;
  }
  pos = p;
}

function parseValue(): Value {
  skipWhitespace();
  if (pos >= end) return UNDEFINED;
  const c = load<u8>(pos);
  switch (c) {
    case 0x22: return parseString();
    case 0x7b: return parseObject();
    case 0x5b: return parseArray();
    case 0x74:
      if (pos + 4 <= end && load<u32>(pos) == WORD_TRUE) {
        pos += 4;
        return TRUE_VALUE;
      }
      return UNDEFINED;
    case 0x66:
      if (pos + 5 <= end && load<u32>(pos) == WORD_FALS && load<u8>(pos, 4) == 0x65) {
        pos += 5;
        return FALSE_VALUE;
      }
      return UNDEFINED;
    case 0x6e:
      if (pos + 4 <= end && load<u32>(pos) == WORD_NULL) {
        pos += 4;
        return NULL_VALUE;
      }
      return UNDEFINED;
  }
  return parseNumber();
}

function parseArray(): Value {
  if (++depth > MAX_DEPTH) return UNDEFINED;
  pos++;
  const array = newArray(4);
  skipWhitespace();
  if (pos < end && load<u8>(pos) == 0x5d) {
    pos++;
    depth--;
    return array;
  }
  while (true) {
    const v = parseValue();
    if (!v) return UNDEFINED;
    arrayAppend(array, v);
    skipWhitespace();
    if (pos >= end) return UNDEFINED;
    const c = load<u8>(pos++);
    if (c == 0x2c) continue;
    if (c == 0x5d) break;
    return UNDEFINED;
  }
  depth--;
  return array;
}

function parseObject(): Value {
  if (++depth > MAX_DEPTH) return UNDEFINED;
  pos++;
  const object = newObject(4);
  skipWhitespace();
  if (pos < end && load<u8>(pos) == 0x7d) {
    pos++;
    depth--;
    return object;
  }
  while (true) {
    skipWhitespace();
    if (pos >= end || load<u8>(pos) != 0x22) return UNDEFINED;
    const key = parseString();
    if (!key) return UNDEFINED;
    skipWhitespace();
    if (pos >= end || load<u8>(pos) != 0x3a) return UNDEFINED;
    pos++;
    const v = parseValue();
    if (!v) return UNDEFINED;
    addMember(object, key, v);
    skipWhitespace();
    if (pos >= end) return UNDEFINED;
    const c = load<u8>(pos++);
    if (c == 0x2c) continue;
    if (c == 0x7d) break;
    return UNDEFINED;
  }
  depth--;
  return object;
}

/**
 * Puts a member into a parsed object, keeping key order; a repeated key keeps its last value, as
 * JSON decoders do. JSON objects are mostly small, with keys in no particular order, so for those
 * a backward scan with inline key comparisons costs less than objectInsert's general search
 * (whose keys may be of any type) and its calls.
 */
// @ts-ignore: decorator
@inline
function addMember(object: Value, key: Value, value: Value): void {
  const c = changetype<CollectionValue>(object);
  const n = c.len;
  if (n > LINEAR_INSERT_MAX || n == c.cap) {
    objectInsert(object, key, value);
    return;
  }
  const items = c.items;
  let at = items + (<usize>n << 3);
  let order = -1;
  while (at > items && (order = compareKeys(load<Value>(at - 8), key)) > 0) at -= 8;
  if (order == 0) {
    store<Value>(at - 8, value, 4);
    return;
  }
  for (let p = items + (<usize>n << 3); p > at; p -= 8) store<u64>(p, load<u64>(p - 8));
  store<Value>(at, key);
  store<Value>(at, value, 4);
  c.len = n + 1;
}

// Two keys of a parsed object, which are always strings. Keys mostly differ in their first byte,
// which settles the order without a call.
// @ts-ignore: decorator
@inline
function compareKeys(a: Value, b: Value): i32 {
  const s = changetype<StringValue>(a);
  const t = changetype<StringValue>(b);
  if (s.len && t.len) {
    const first = <i32>load<u8>(s.data) - <i32>load<u8>(t.data);
    if (first) return first;
  }
  return compareBytes(s.data, s.len, t.data, t.len);
}

// pos is at the opening quote. Eight bytes at a time up to the first quote, backslash or control
// character, which `stringStops` locates without a second, bytewise pass.
// @ts-ignore: decorator
@inline
function parseString(): Value {
  const start = pos + 1;
  let p = start;
  while (true) {
    if (p + 8 <= end) {
      const stops = stringStops(load<u64>(p));
      if (!stops) {
        p += 8;
        continue;
      }
      p += <usize>(ctz(stops) >> 3);
    } else {
      while (p < end && !isStringStop(load<u8>(p))) p++;
      if (p == end) return UNDEFINED;
    }
    const b = load<u8>(p);
    if (b == 0x22) {
      pos = p + 1;
      return stringValue(start, <i32>(p - start));
    }
    return b == 0x5c ? parseEscapedString(start) : UNDEFINED;
  }
}

// @ts-ignore: decorator
@inline
function isStringStop(b: u8): bool {
  return b == 0x22 || b == 0x5c || b < 0x20;
}

/**
 * The high bit of each of the 8 bytes (little-endian) that is a quote, a backslash or a control
 * character: the SWAR zero-byte test. The lowest bit set is exact (bytes of 0x80 and above are
 * masked out); bytes above it may be flagged wrongly, through borrows, so only the lowest counts.
 */
// @ts-ignore: decorator
@inline
export function stringStops(w: u64): u64 {
  const quote = w ^ 0x2222222222222222;
  const backslash = w ^ 0x5c5c5c5c5c5c5c5c;
  const found = ((quote - 0x0101010101010101) & ~quote)
    | ((backslash - 0x0101010101010101) & ~backslash)
    | ((w - 0x2020202020202020) & ~w);
  return found & 0x8080808080808080;
}

// The slow path: the string has escapes, so it is decoded into a copy. Decoding never makes a
// string longer, so the raw length bounds the copy.
function parseEscapedString(start: usize): Value {
  let p = start;
  while (true) {
    if (p >= end) return UNDEFINED;
    const b = load<u8>(p);
    if (b == 0x22) break;
    if (b < 0x20) return UNDEFINED;
    p += b == 0x5c ? 2 : 1;
  }
  const rawEnd = p;
  const out = alloc(rawEnd - start);
  let o = out;
  let q = start;
  while (q < rawEnd) {
    const b = load<u8>(q);
    if (b != 0x5c) {
      store<u8>(o++, b);
      q++;
      continue;
    }
    const e = load<u8>(q, 1);
    q += 2;
    switch (e) {
      case 0x22: case 0x5c: case 0x2f: store<u8>(o++, e); break;
      case 0x62: store<u8>(o++, 0x08); break;
      case 0x66: store<u8>(o++, 0x0c); break;
      case 0x6e: store<u8>(o++, 0x0a); break;
      case 0x72: store<u8>(o++, 0x0d); break;
      case 0x74: store<u8>(o++, 0x09); break;
      case 0x75: {
        let code = hex4(q, rawEnd);
        if (code < 0) return UNDEFINED;
        q += 4;
        if ((code & 0xfc00) == 0xd800) {
          // A high surrogate makes a code point only with a low surrogate after it.
          const low = q + 6 <= rawEnd && load<u8>(q) == 0x5c && load<u8>(q, 1) == 0x75 ? hex4(q + 2, rawEnd) : -1;
          if ((low & 0xfc00) == 0xdc00 && low >= 0) {
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
            q += 6;
          } else {
            code = 0xfffd;
          }
        } else if ((code & 0xfc00) == 0xdc00) {
          code = 0xfffd;
        }
        o = writeUTF8(o, code);
        break;
      }
      default:
        return UNDEFINED;
    }
  }
  pos = rawEnd + 1;
  return stringValue(out, <i32>(o - out));
}

function hex4(p: usize, limit: usize): i32 {
  if (p + 4 > limit) return -1;
  let code = 0;
  for (let i = 0; i < 4; i++) {
    const c = <i32>load<u8>(p + i);
    let d: i32;
    if (c >= 0x30 && c <= 0x39) d = c - 0x30;
    else if ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66) d = (c | 0x20) - 0x61 + 10;
    else return -1;
    code = (code << 4) | d;
  }
  return code;
}

/** Writes code point `code` as UTF-8 at o; returns the address after it. */
export function writeUTF8(o: usize, code: i32): usize {
  if (code < 0x80) {
    store<u8>(o, code);
    return o + 1;
  }
  if (code < 0x800) {
    store<u8>(o, 0xc0 | (code >> 6));
    store<u8>(o, 0x80 | (code & 0x3f), 1);
    return o + 2;
  }
  if (code < 0x10000) {
    store<u8>(o, 0xe0 | (code >> 12));
    store<u8>(o, 0x80 | ((code >> 6) & 0x3f), 1);
    store<u8>(o, 0x80 | (code & 0x3f), 2);
    return o + 3;
  }
  store<u8>(o, 0xf0 | (code >> 18));
  store<u8>(o, 0x80 | ((code >> 12) & 0x3f), 1);
  store<u8>(o, 0x80 | ((code >> 6) & 0x3f), 2);
  store<u8>(o, 0x80 | (code & 0x3f), 3);
  return o + 4;
}

// JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
function parseNumber(): Value {
  const start = pos;
  let p = pos;
  const negative = load<u8>(p) == 0x2d;
  if (negative) p++;
  if (p >= end) return UNDEFINED;
  let c = load<u8>(p);
  if (<u32>(c - 0x30) > 9) return UNDEFINED;

  // Up to 19 significant digits go into the mantissa (they fit a u64); beyond that the number
  // is marked truncated and only the exponent keeps track of integer digits.
  let mantissa: u64 = 0;
  let significant = 0;
  let exponent = 0;
  let truncated = false;
  if (c == 0x30) {
    p++;
  } else {
    while (p < end && <u32>((c = load<u8>(p)) - 0x30) <= 9) {
      if (significant < 19) {
        mantissa = mantissa * 10 + <u64>(c - 0x30);
        significant++;
      } else {
        exponent++;
        truncated = true;
      }
      p++;
    }
  }
  const integerEnd = p;

  let isFloat = false;
  if (p < end && load<u8>(p) == 0x2e) {
    isFloat = true;
    p++;
    const fractionStart = p;
    while (p < end && <u32>((c = load<u8>(p)) - 0x30) <= 9) {
      if (mantissa == 0 && c == 0x30) {
        exponent--;
      } else if (significant < 19) {
        mantissa = mantissa * 10 + <u64>(c - 0x30);
        significant++;
        exponent--;
      } else {
        truncated = true;
      }
      p++;
    }
    if (p == fractionStart) return UNDEFINED;
  }
  if (p < end && (load<u8>(p) | 0x20) == 0x65) {
    isFloat = true;
    p++;
    let negativeExponent = false;
    if (p < end && (load<u8>(p) == 0x2b || load<u8>(p) == 0x2d)) {
      negativeExponent = load<u8>(p) == 0x2d;
      p++;
    }
    const digitsStart = p;
    let e = 0;
    while (p < end && <u32>((c = load<u8>(p)) - 0x30) <= 9) {
      if (e < 100000) e = e * 10 + <i32>(c - 0x30);
      p++;
    }
    if (p == digitsStart) return UNDEFINED;
    exponent += negativeExponent ? -e : e;
  }
  pos = p;

  if (!isFloat) {
    if (!truncated && (mantissa <= <u64>i64.MAX_VALUE || (negative && mantissa == <u64>i64.MIN_VALUE))) {
      return intValue(negative ? -<i64>mantissa : <i64>mantissa);
    }
    return bigIntegerValue(start, <i32>(integerEnd - start), parseDecimal(start, <i32>(p - start)));
  }
  // Exact when the mantissa and the power of ten are both exact f64s (Clinger's fast path).
  if (!truncated && mantissa <= 9007199254740992 && exponent >= -22 && exponent <= 22) {
    let f = <f64>mantissa;
    f = exponent < 0 ? f / load<f64>(POW10 + (<usize>-exponent << 3)) : f * load<f64>(POW10 + (<usize>exponent << 3));
    return writtenFloatValue(negative ? -f : f, start, <i32>(p - start));
  }
  // Beyond the fast path: exact, and rare.
  const f = parseDecimal(start, <i32>(p - start));
  return Math.abs(f) <= f64.MAX_VALUE ? writtenFloatValue(f, start, <i32>(p - start)) : UNDEFINED;
}

