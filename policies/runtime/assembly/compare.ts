// Value order, as OPA's ast.Compare defines it: values of different types order by type
// (null < boolean < number < string < array < object < set); numbers compare numerically (so
// 1 == 1.0), strings bytewise, arrays and sets element by element then by length, objects by
// their sorted entries (key, then value, pair by pair) then by length.

import {
  Value, TYPE_NULL, TYPE_BOOLEAN, TYPE_NUMBER, TYPE_STRING, TYPE_ARRAY, TYPE_OBJECT,
  TYPE_SET, NUMBER_INT, NUMBER_FLOAT, NumberValue, StringValue, CollectionValue, typeOf,
} from "./value";

/**
 * Bytewise comparison of two byte strings, a shorter prefix first. Eight bytes at a time: in a
 * little-endian word the first differing byte is the lowest one, found with `ctz`. Object keys
 * are short, so this beats `memory.compare`, which V8 runs a byte at a time when the two
 * addresses are not equally aligned.
 */
export function compareBytes(a: usize, aLen: i32, b: usize, bLen: i32): i32 {
  const n = <usize>min(aLen, bLen);
  let i: usize = 0;
  for (; i + 8 <= n; i += 8) {
    const x = load<u64>(a + i);
    const y = load<u64>(b + i);
    if (x != y) {
      const shift = ctz(x ^ y) & 56;
      return <i32>((x >> shift) & 0xff) - <i32>((y >> shift) & 0xff);
    }
  }
  for (; i < n; i++) {
    const x = <i32>load<u8>(a + i);
    const y = <i32>load<u8>(b + i);
    if (x != y) return x - y;
  }
  return aLen < bLen ? -1 : i32(aLen > bLen);
}

/** Whether the n bytes at a and at b are the same, eight at a time. */
// @ts-ignore: decorator
@inline
export function bytesEqual(a: usize, b: usize, n: usize): bool {
  let i: usize = 0;
  for (; i + 8 <= n; i += 8) if (load<u64>(a + i) != load<u64>(b + i)) return false;
  if (i + 4 <= n) {
    if (load<u32>(a + i) != load<u32>(b + i)) return false;
    i += 4;
  }
  for (; i < n; i++) if (load<u8>(a + i) != load<u8>(b + i)) return false;
  return true;
}

/** Compares v with the string whose UTF-8 bytes are given (object-key lookups). */
export function compareWithString(v: Value, data: usize, len: i32): i32 {
  const tag = load<u8>(v);
  if (tag != TYPE_STRING) return tag < TYPE_STRING ? -1 : 1;
  const s = changetype<StringValue>(v);
  return compareBytes(s.data, s.len, data, len);
}

// @ts-ignore: decorator
@inline
function sign64(a: i64, b: i64): i32 {
  return a < b ? -1 : i32(a > b);
}

// Big integers (beyond i64) by their decimal text: sign, then digit count, then digits.
function compareBigTexts(a: NumberValue, b: NumberValue): i32 {
  const aNegative = load<u8>(a.text) == 0x2d;
  const bNegative = load<u8>(b.text) == 0x2d;
  if (aNegative != bNegative) return aNegative ? -1 : 1;
  let c = a.textLen != b.textLen
    ? (a.textLen < b.textLen ? -1 : 1)
    : memory.compare(a.text, b.text, a.textLen);
  c = c < 0 ? -1 : i32(c > 0);
  return aNegative ? -c : c;
}

// An i64 against an f64, exactly.
function compareIntFloat(i: i64, f: f64): i32 {
  const fi = <f64>i;
  if (fi < f) return -1;
  if (fi > f) return 1;
  // Equal after rounding i to f64: f is integral; compare in the integer domain unless f is
  // 2^63, just beyond i64.
  if (f >= 9223372036854775808.0) return -1;
  return sign64(i, <i64>f);
}

export function compareNumbers(a: Value, b: Value): i32 {
  const x = changetype<NumberValue>(a);
  const y = changetype<NumberValue>(b);
  if (x.kind == NUMBER_INT) {
    if (y.kind == NUMBER_INT) return sign64(x.bits, y.bits);
    if (y.kind == NUMBER_FLOAT) return compareIntFloat(x.bits, reinterpret<f64>(y.bits));
    // y is a big integer, beyond any i64 in magnitude.
    return load<u8>(y.text) == 0x2d ? 1 : -1;
  }
  if (x.kind == NUMBER_FLOAT) {
    if (y.kind == NUMBER_INT) return -compareIntFloat(y.bits, reinterpret<f64>(x.bits));
  } else {
    if (y.kind == NUMBER_INT) return load<u8>(x.text) == 0x2d ? -1 : 1;
    if (y.kind != NUMBER_FLOAT) return compareBigTexts(x, y);
  }
  const f = reinterpret<f64>(x.bits);
  const g = reinterpret<f64>(y.bits);
  return f < g ? -1 : i32(f > g);
}

export function compareValues(a: Value, b: Value): i32 {
  if (a == b) return 0;
  const ta = typeOf(a);
  const tb = typeOf(b);
  if (ta != tb) return ta < tb ? -1 : 1;
  switch (ta) {
    case TYPE_NULL:
      return 0;
    case TYPE_BOOLEAN:
      return <i32>load<u8>(a, 1) - <i32>load<u8>(b, 1);
    case TYPE_NUMBER:
      return compareNumbers(a, b);
    case TYPE_STRING: {
      const s = changetype<StringValue>(a);
      const t = changetype<StringValue>(b);
      return compareBytes(s.data, s.len, t.data, t.len);
    }
    case TYPE_OBJECT:
      return compareItems(changetype<CollectionValue>(a), changetype<CollectionValue>(b), 1);
    default: // arrays and sets
      return compareItems(changetype<CollectionValue>(a), changetype<CollectionValue>(b), 0);
  }
}

// Item by item (each item one value, or a key/value pair when pairShift is 1), then by length.
function compareItems(a: CollectionValue, b: CollectionValue, pairShift: i32): i32 {
  const n = <usize>min(a.len, b.len) << pairShift;
  for (let i: usize = 0; i < n; i++) {
    const c = compareValues(load<usize>(a.items + (i << 2)), load<usize>(b.items + (i << 2)));
    if (c != 0) return c;
  }
  return a.len < b.len ? -1 : i32(a.len > b.len);
}

/** Equality in value order (1 == 1.0); cheaper than compareValues for unequal values. */
export function valuesEqual(a: Value, b: Value): bool {
  if (a == b) return true;
  const ta = typeOf(a);
  if (ta != typeOf(b) || ta == 0) return false;
  switch (ta) {
    case TYPE_STRING: {
      const s = changetype<StringValue>(a);
      const t = changetype<StringValue>(b);
      return s.len == t.len && bytesEqual(s.data, t.data, s.len);
    }
    case TYPE_NUMBER: {
      const x = changetype<NumberValue>(a);
      const y = changetype<NumberValue>(b);
      if (x.kind == NUMBER_INT && y.kind == NUMBER_INT) return x.bits == y.bits;
      return compareNumbers(a, b) == 0;
    }
    case TYPE_ARRAY:
    case TYPE_OBJECT:
    case TYPE_SET: {
      const x = changetype<CollectionValue>(a);
      const y = changetype<CollectionValue>(b);
      if (x.len != y.len) return false;
      const n = <usize>x.len << <usize>(ta == TYPE_OBJECT);
      for (let i: usize = 0; i < n; i++) {
        if (!valuesEqual(load<usize>(x.items + (i << 2)), load<usize>(y.items + (i << 2)))) return false;
      }
      return true;
    }
  }
  return compareValues(a, b) == 0;
}
