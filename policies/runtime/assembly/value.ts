// The Rego value model and the API every part of the runtime (and every builtin) works through.
//
// A value is a pointer (`Value`, an i32 address in the OPA heap); 0 means "undefined". Every
// value starts with a one-byte type tag, numbered as in OPA's own C runtime so that the tag order
// is also the order of types in comparisons: null < boolean < number < string < array < object
// < set. Layouts (byte offsets):
//
//   null      tag                                  one static instance
//   boolean   tag, [1] 0|1                         two static instances
//   number    tag, [1] kind, [4] textLen, [8] i64 or f64 bits, [16] text pointer
//   string    tag, [4] byte length, [8] pointer to UTF-8 bytes (not NUL-terminated)
//   array     tag, [4] length, [8] capacity, [12] pointer to elements (4 bytes each)
//   object    tag, [4] length, [8] capacity, [12] pointer to (key, value) pairs, sorted by key
//   set       tag, [4] length, [8] capacity, [12] pointer to elements, sorted
//
// Values are allocated on the heap and never freed individually; the host resets the heap
// between evaluations. Strings may point into memory they do not own (the JSON text they were
// parsed from, a data segment): string bytes are immutable and must outlive the value.
//
// Objects and sets stay sorted in value order (see compare.ts), so lookups are binary searches
// and iteration order is OPA's. Inserting in ascending order (as parsing and copying usually
// do) appends without searching.
//
// Collections are mutable while they are being built; a value that has been handed to generated
// code or stored in another collection must be treated as immutable (copy it with
// `shallowCopy` first).
//
// The API at a glance (all exported from this file):
//   types     Value, UNDEFINED, TYPE_*, typeOf, isNull … isSet, isCollection
//   scalars   NULL_VALUE, TRUE_VALUE, FALSE_VALUE, booleanValue, booleanOf
//   numbers   intValue, floatValue, writtenFloatValue, numberFromF64, bigIntegerValue, NUMBER_*, numberKind,
//             numberIntOf, numberFloatOf, numberToF64, numberIsI64, numberToI64,
//             numberAdd … numberFloor (number.ts), parseNumberText
//   strings   stringValue (no copy), stringCopy, stringLength, stringData, stringEqualsBytes
//             (code points: builtins/utf8.ts)
//   arrays    newArray, arrayLength, arrayGet, arraySet, arrayAppend
//   objects   newObject, objectLength, objectKeyAt, objectValueAt, objectGet, objectGetBytes,
//             objectInsert, objectInsertOnce
//   sets      newSet, setLength, setAt, setContains, setAdd, setUnion, setIntersection,
//             setDifference
//   any       collectionLength, collectionItems, shallowCopy, getMember, compareValues,
//             valuesEqual, compareBytes, compareWithString, sortValues
//   JSON      parseJSON, dumpJSON(out, v, escapeHTML), writeJSONString, writeNumber, writeI64,
//             writeF64, ByteBuffer (a growable byte buffer; toStringValue, toCString)

import { alloc, copyBytes, realloc } from "./heap";
import { bytesEqual, compareValues, compareWithString, valuesEqual } from "./compare";

export { compareValues, valuesEqual, compareBytes, compareWithString } from "./compare";
export { ByteBuffer } from "./buffer";
export { dumpJSON, writeJSONString } from "./json-dump";
export { parseJSON } from "./json-parse";
export { writeNumber, writeI64, writeF64 } from "./number-format";
export {
  numberFromF64, numberAdd, numberSubtract, numberMultiply, numberDivide, numberRemainder,
  numberAbs, numberRound, numberCeil, numberFloor, parseNumberText,
} from "./number";
export { setUnion, setIntersection, setDifference } from "./sets";
export { sortValues } from "./sort";

export type Value = usize;

// @ts-ignore: decorator
@inline export const UNDEFINED: Value = 0;

// @ts-ignore: decorator
@inline export const TYPE_NULL: u8 = 1;
// @ts-ignore: decorator
@inline export const TYPE_BOOLEAN: u8 = 2;
// @ts-ignore: decorator
@inline export const TYPE_NUMBER: u8 = 3;
// @ts-ignore: decorator
@inline export const TYPE_STRING: u8 = 4;
// @ts-ignore: decorator
@inline export const TYPE_ARRAY: u8 = 5;
// @ts-ignore: decorator
@inline export const TYPE_OBJECT: u8 = 6;
// @ts-ignore: decorator
@inline export const TYPE_SET: u8 = 7;

/** An integer held exactly as an i64. */
// @ts-ignore: decorator
@inline export const NUMBER_INT: u8 = 0;
/** A number held as an f64 (written with a fraction or exponent, or computed inexactly). */
// @ts-ignore: decorator
@inline export const NUMBER_FLOAT: u8 = 1;
/** An integer too large for an i64: its exact decimal text (parsed or computed by bignum.ts), plus an f64 approximation for mixed float arithmetic. */
// @ts-ignore: decorator
@inline export const NUMBER_BIG: u8 = 2;

@unmanaged export class NumberValue {
  tag: u8;
  kind: u8;
  textLen: i32;
  bits: i64;
  text: usize;
}

@unmanaged export class StringValue {
  tag: u8;
  len: i32;
  data: usize;
}

/** Arrays, objects and sets. For objects each item is a (key, value) pair of 8 bytes. */
@unmanaged export class CollectionValue {
  tag: u8;
  len: i32;
  cap: i32;
  items: usize;
}

// ---------------------------------------------------------------------------------------------
// Type tags

/** The type tag of v, or 0 for undefined. */
// @ts-ignore: decorator
@inline
export function typeOf(v: Value): u8 {
  return v ? load<u8>(v) : 0;
}

// @ts-ignore: decorator
@inline export function isNull(v: Value): bool { return typeOf(v) == TYPE_NULL; }
// @ts-ignore: decorator
@inline export function isBoolean(v: Value): bool { return typeOf(v) == TYPE_BOOLEAN; }
// @ts-ignore: decorator
@inline export function isNumber(v: Value): bool { return typeOf(v) == TYPE_NUMBER; }
// @ts-ignore: decorator
@inline export function isString(v: Value): bool { return typeOf(v) == TYPE_STRING; }
// @ts-ignore: decorator
@inline export function isArray(v: Value): bool { return typeOf(v) == TYPE_ARRAY; }
// @ts-ignore: decorator
@inline export function isObject(v: Value): bool { return typeOf(v) == TYPE_OBJECT; }
// @ts-ignore: decorator
@inline export function isSet(v: Value): bool { return typeOf(v) == TYPE_SET; }

/** True for arrays, objects and sets. */
// @ts-ignore: decorator
@inline
export function isCollection(v: Value): bool {
  return typeOf(v) >= TYPE_ARRAY;
}

// ---------------------------------------------------------------------------------------------
// null and booleans

export const NULL_VALUE: Value = memory.data<u8>([TYPE_NULL, 0, 0, 0, 0, 0, 0, 0], 8);
export const FALSE_VALUE: Value = memory.data<u8>([TYPE_BOOLEAN, 0, 0, 0, 0, 0, 0, 0], 8);
export const TRUE_VALUE: Value = memory.data<u8>([TYPE_BOOLEAN, 1, 0, 0, 0, 0, 0, 0], 8);

// @ts-ignore: decorator
@inline
export function booleanValue(b: bool): Value {
  return b ? TRUE_VALUE : FALSE_VALUE;
}

/** The boolean held by a boolean value. */
// @ts-ignore: decorator
@inline
export function booleanOf(v: Value): bool {
  return load<u8>(v, 1) != 0;
}

// ---------------------------------------------------------------------------------------------
// Numbers (arithmetic and conversions live in number.ts)

// @ts-ignore: decorator
@inline
function newNumber(kind: u8, bits: i64): Value {
  const v = alloc(offsetof<NumberValue>());
  const n = changetype<NumberValue>(v);
  n.tag = TYPE_NUMBER;
  n.kind = kind;
  n.bits = bits;
  n.textLen = 0;
  return v;
}

// Integers 0..255 are preallocated (filled in when the module starts): iteration keys, counts
// and small constants need no allocation.
// @ts-ignore: decorator
@inline const SMALL_INTS_COUNT: i32 = 256;
// @ts-ignore: decorator
@inline const SMALL_INT_STRIDE: usize = (offsetof<NumberValue>() + 7) & ~7;
const SMALL_INTS = memory.data(SMALL_INTS_COUNT * <i32>SMALL_INT_STRIDE, 8);
for (let i = 0; i < SMALL_INTS_COUNT; i++) {
  const n = changetype<NumberValue>(SMALL_INTS + <usize>i * SMALL_INT_STRIDE);
  n.tag = TYPE_NUMBER;
  n.kind = NUMBER_INT;
  n.bits = i;
}

export function intValue(i: i64): Value {
  if (<u64>i < <u64>SMALL_INTS_COUNT) return SMALL_INTS + <usize>i * SMALL_INT_STRIDE;
  return newNumber(NUMBER_INT, i);
}

/** A number held as an f64 as it is; `numberFromF64` is the right constructor for results. */
export function floatValue(f: f64): Value {
  return newNumber(NUMBER_FLOAT, reinterpret<i64>(f));
}

/** A number of `kind` with the text it was read from (the bytes must stay in place). */
function numberWithText(kind: u8, f: f64, text: usize, len: i32): Value {
  const v = newNumber(kind, reinterpret<i64>(f));
  const n = changetype<NumberValue>(v);
  n.text = text;
  n.textLen = len;
  return v;
}

/**
 * A float read from text, with that text: JSON output writes it as it was written (`1.0`,
 * `1e6`), as OPA, whose numbers keep their text, does. Arithmetic results have no text and are
 * written in the shortest form.
 */
export function writtenFloatValue(f: f64, text: usize, len: i32): Value {
  return numberWithText(NUMBER_FLOAT, f, text, len);
}

/** An integer too large for an i64, kept as its decimal text, with an f64 approximation. */
export function bigIntegerValue(text: usize, len: i32, approximation: f64): Value {
  return numberWithText(NUMBER_BIG, approximation, text, len);
}

// @ts-ignore: decorator
@inline
export function numberKind(v: Value): u8 {
  return changetype<NumberValue>(v).kind;
}

/** The i64 of a NUMBER_INT value. */
// @ts-ignore: decorator
@inline
export function numberIntOf(v: Value): i64 {
  return changetype<NumberValue>(v).bits;
}

/** The f64 of a NUMBER_FLOAT value, or the approximation of a NUMBER_BIG one. */
// @ts-ignore: decorator
@inline
export function numberFloatOf(v: Value): f64 {
  return reinterpret<f64>(changetype<NumberValue>(v).bits);
}

/** Any number as an f64 (big integers approximately). */
export function numberToF64(v: Value): f64 {
  const n = changetype<NumberValue>(v);
  return n.kind == NUMBER_INT ? <f64>n.bits : reinterpret<f64>(n.bits);
}

/**
 * Whether the number is an integer that fits an i64, however it is held (3.0 counts, as OPA
 * treats any number with an exact integer value as an integer).
 */
export function numberIsI64(v: Value): bool {
  const n = changetype<NumberValue>(v);
  if (n.kind == NUMBER_INT) return true;
  if (n.kind == NUMBER_BIG) return false;
  const f = reinterpret<f64>(n.bits);
  return f == Math.trunc(f) && f >= -9223372036854775808.0 && f < 9223372036854775808.0;
}

/** The i64 of a number for which `numberIsI64` holds. */
export function numberToI64(v: Value): i64 {
  const n = changetype<NumberValue>(v);
  return n.kind == NUMBER_INT ? n.bits : <i64>reinterpret<f64>(n.bits);
}

// ---------------------------------------------------------------------------------------------
// Strings

/** A string over `len` UTF-8 bytes at `data`, which are not copied and must stay in place. */
// @ts-ignore: decorator
@inline
export function stringValue(data: usize, len: i32): Value {
  const v = alloc(offsetof<StringValue>());
  const s = changetype<StringValue>(v);
  s.tag = TYPE_STRING;
  s.len = len;
  s.data = data;
  return v;
}

/** A string over a heap copy of the bytes. */
export function stringCopy(data: usize, len: i32): Value {
  const v = alloc(offsetof<StringValue>() + <usize>len);
  const copy = v + offsetof<StringValue>();
  copyBytes(copy, data, len);
  const s = changetype<StringValue>(v);
  s.tag = TYPE_STRING;
  s.len = len;
  s.data = copy;
  return v;
}

// @ts-ignore: decorator
@inline
export function stringLength(v: Value): i32 {
  return changetype<StringValue>(v).len;
}

// @ts-ignore: decorator
@inline
export function stringData(v: Value): usize {
  return changetype<StringValue>(v).data;
}

export function stringEqualsBytes(v: Value, data: usize, len: i32): bool {
  const s = changetype<StringValue>(v);
  return s.len == len && bytesEqual(s.data, data, len);
}

// ---------------------------------------------------------------------------------------------
// Collections: common

// @ts-ignore: decorator
@inline
function newCollection(tag: u8, capacity: i32, itemSize: usize): Value {
  const v = alloc(offsetof<CollectionValue>());
  const c = changetype<CollectionValue>(v);
  c.tag = tag;
  c.len = 0;
  c.cap = capacity;
  c.items = capacity ? alloc(<usize>capacity * itemSize) : 0;
  return v;
}

/** Element count of an array, object or set. */
// @ts-ignore: decorator
@inline
export function collectionLength(v: Value): i32 {
  return changetype<CollectionValue>(v).len;
}

/** Address of the first element (arrays, sets) or pair (objects). */
// @ts-ignore: decorator
@inline
export function collectionItems(v: Value): usize {
  return changetype<CollectionValue>(v).items;
}

/** Makes room for one more item; keeps the items buffer growing in place when it is last on the heap. */
function reserveOne(c: CollectionValue, itemSize: usize): void {
  if (c.len < c.cap) return;
  const cap = c.cap ? c.cap << 1 : 4;
  c.items = c.items
    ? realloc(c.items, <usize>c.cap * itemSize, <usize>cap * itemSize)
    : alloc(<usize>cap * itemSize);
  c.cap = cap;
}

/** A copy of the container (the elements themselves are shared); scalars are returned as they are. */
export function shallowCopy(v: Value): Value {
  const tag = typeOf(v);
  if (tag < TYPE_ARRAY) return v;
  const c = changetype<CollectionValue>(v);
  const itemSize: usize = tag == TYPE_OBJECT ? 8 : 4;
  const copy = newCollection(tag, c.len, itemSize);
  memory.copy(collectionItems(copy), c.items, <usize>c.len * itemSize);
  changetype<CollectionValue>(copy).len = c.len;
  return copy;
}

// Binary searches over sorted items `stride` bytes apart, comparing with the value stored at
// the start of each item. They return the index if found, else -(insertion index) - 1.

// @ts-ignore: decorator
@inline
function search(items: usize, len: i32, stride: usize, key: Value): i32 {
  return isString(key)
    ? searchString(items, len, stride, stringData(key), stringLength(key))
    : searchValue(items, len, stride, key);
}

/** For the string made of the given UTF-8 bytes. */
// @ts-ignore: decorator
@inline
function searchString(items: usize, len: i32, stride: usize, data: usize, n: i32): i32 {
  let lo = 0;
  let hi = len - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareWithString(load<usize>(items + <usize>mid * stride), data, n);
    if (c < 0) lo = mid + 1;
    else if (c > 0) hi = mid - 1;
    else return mid;
  }
  return -lo - 1;
}

// @ts-ignore: decorator
@inline
function searchValue(items: usize, len: i32, stride: usize, key: Value): i32 {
  let lo = 0;
  let hi = len - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareValues(load<usize>(items + <usize>mid * stride), key);
    if (c < 0) lo = mid + 1;
    else if (c > 0) hi = mid - 1;
    else return mid;
  }
  return -lo - 1;
}

// Opens a gap at index i of a collection with room for one more item. Short moves are done
// inline (see copyBytes).
// @ts-ignore: decorator
@inline
function openGap(c: CollectionValue, i: i32, itemSize: usize): usize {
  const at = c.items + <usize>i * itemSize;
  const words = <usize>(c.len - i) * (itemSize >> 2);
  if (words <= 16) {
    for (let w = words; w > 0; w--) store<u32>(at + itemSize + ((w - 1) << 2), load<u32>(at + ((w - 1) << 2)));
  } else {
    memory.copy(at + itemSize, at, words << 2);
  }
  c.len++;
  return at;
}

// ---------------------------------------------------------------------------------------------
// Arrays

export function newArray(capacity: i32): Value {
  return newCollection(TYPE_ARRAY, capacity, 4);
}

// @ts-ignore: decorator
@inline
export function arrayLength(v: Value): i32 {
  return changetype<CollectionValue>(v).len;
}

/** Element i; i must be within bounds. */
// @ts-ignore: decorator
@inline
export function arrayGet(v: Value, i: i32): Value {
  return load<usize>(changetype<CollectionValue>(v).items + (<usize>i << 2));
}

/** Replaces element i; i must be within bounds. */
// @ts-ignore: decorator
@inline
export function arraySet(v: Value, i: i32, x: Value): void {
  store<usize>(changetype<CollectionValue>(v).items + (<usize>i << 2), x);
}

export function arrayAppend(v: Value, x: Value): void {
  const c = changetype<CollectionValue>(v);
  reserveOne(c, 4);
  store<usize>(c.items + (<usize>c.len << 2), x);
  c.len++;
}

// ---------------------------------------------------------------------------------------------
// Objects

// @ts-ignore: decorator
@inline
export function newObject(capacity: i32): Value {
  return newCollection(TYPE_OBJECT, capacity, 8);
}

// @ts-ignore: decorator
@inline
export function objectLength(v: Value): i32 {
  return changetype<CollectionValue>(v).len;
}

/** Key of the i-th entry in key order. */
// @ts-ignore: decorator
@inline
export function objectKeyAt(v: Value, i: i32): Value {
  return load<usize>(changetype<CollectionValue>(v).items + (<usize>i << 3));
}

/** Value of the i-th entry in key order. */
// @ts-ignore: decorator
@inline
export function objectValueAt(v: Value, i: i32): Value {
  return load<usize>(changetype<CollectionValue>(v).items + (<usize>i << 3), 4);
}

// Objects up to this size are searched from the first key for an equal one: most keys differ
// in length and are rejected at once, which costs less than the ordered comparisons of a binary
// search.
// @ts-ignore: decorator
@inline const LINEAR_SEARCH_MAX: i32 = 8;

/** Index of the string key made of the given UTF-8 bytes, or -1. */
// @ts-ignore: decorator
@inline
function objectFindString(c: CollectionValue, data: usize, len: i32): i32 {
  const n = c.len;
  if (n > LINEAR_SEARCH_MAX) {
    const i = searchString(c.items, n, 8, data, len);
    return i >= 0 ? i : -1;
  }
  for (let i = 0; i < n; i++) {
    const k = changetype<StringValue>(load<usize>(c.items + (<usize>i << 3)));
    if (k.tag == TYPE_STRING && k.len == len && bytesEqual(k.data, data, len)) return i;
  }
  return -1;
}

/** The value under key, or 0. Inlined: it is the heart of every `x.y` of a policy. */
// @ts-ignore: decorator
@inline
export function objectGet(v: Value, key: Value): Value {
  const c = changetype<CollectionValue>(v);
  const i = isString(key) ? objectFindString(c, stringData(key), stringLength(key)) : searchValue(c.items, c.len, 8, key);
  return i >= 0 ? load<usize>(c.items + (<usize>i << 3), 4) : UNDEFINED;
}

/** The value under the string key made of the given UTF-8 bytes, or 0. */
export function objectGetBytes(v: Value, data: usize, len: i32): Value {
  const c = changetype<CollectionValue>(v);
  const i = objectFindString(c, data, len);
  return i >= 0 ? load<usize>(c.items + (<usize>i << 3), 4) : UNDEFINED;
}

// Index of key in an object, or -(insertion index) - 1; checks the last key first so that
// ascending inserts cost one comparison.
// @ts-ignore: decorator
@inline
function objectIndex(c: CollectionValue, key: Value): i32 {
  const n = c.len;
  if (n == 0) return -1;
  const lastKey = load<usize>(c.items + (<usize>(n - 1) << 3));
  const last = isString(key) ? compareWithString(lastKey, stringData(key), stringLength(key)) : compareValues(lastKey, key);
  if (last < 0) return -n - 1;
  if (last == 0) return n - 1;
  return search(c.items, n - 1, 8, key);
}

/** Sets key to value, replacing an existing entry. */
export function objectInsert(v: Value, key: Value, value: Value): void {
  const c = changetype<CollectionValue>(v);
  const i = objectIndex(c, key);
  if (i >= 0) {
    store<usize>(c.items + (<usize>i << 3), value, 4);
    return;
  }
  reserveOne(c, 8);
  const at = openGap(c, -i - 1, 8);
  store<usize>(at, key);
  store<usize>(at, value, 4);
}

/**
 * Sets key to value unless the key is present: returns true if inserted or already equal to
 * value, false on a conflicting value (complete rules and object comprehensions).
 */
export function objectInsertOnce(v: Value, key: Value, value: Value): bool {
  const c = changetype<CollectionValue>(v);
  const i = objectIndex(c, key);
  if (i >= 0) return valuesEqual(load<usize>(c.items + (<usize>i << 3), 4), value);
  reserveOne(c, 8);
  const at = openGap(c, -i - 1, 8);
  store<usize>(at, key);
  store<usize>(at, value, 4);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Sets

export function newSet(capacity: i32): Value {
  return newCollection(TYPE_SET, capacity, 4);
}

// @ts-ignore: decorator
@inline
export function setLength(v: Value): i32 {
  return changetype<CollectionValue>(v).len;
}

/** The i-th element in value order. */
// @ts-ignore: decorator
@inline
export function setAt(v: Value, i: i32): Value {
  return load<usize>(changetype<CollectionValue>(v).items + (<usize>i << 2));
}

export function setContains(v: Value, x: Value): bool {
  const c = changetype<CollectionValue>(v);
  return search(c.items, c.len, 4, x) >= 0;
}

/** Adds x unless an equal element is present. */
export function setAdd(v: Value, x: Value): void {
  const c = changetype<CollectionValue>(v);
  const n = c.len;
  let i = -n - 1;
  if (n > 0) {
    const last = compareValues(load<usize>(c.items + (<usize>(n - 1) << 2)), x);
    if (last == 0) return;
    if (last > 0) {
      i = search(c.items, n - 1, 4, x);
      if (i >= 0) return;
    }
  }
  reserveOne(c, 4);
  store<usize>(openGap(c, -i - 1, 4), x);
}

// ---------------------------------------------------------------------------------------------
// Generic access

/**
 * `collection[key]`: an array element (key an integer index), an object value, or for a set the
 * element itself if present. 0 when absent or when v is not a collection.
 */
// @ts-ignore: decorator
@inline
export function getMember(v: Value, key: Value): Value {
  switch (typeOf(v)) {
    case TYPE_OBJECT:
      return objectGet(v, key);
    case TYPE_ARRAY: {
      if (!isNumber(key) || !numberIsI64(key)) return UNDEFINED;
      const i = numberToI64(key);
      return i >= 0 && i < <i64>arrayLength(v) ? arrayGet(v, <i32>i) : UNDEFINED;
    }
    case TYPE_SET: {
      const c = changetype<CollectionValue>(v);
      const i = search(c.items, c.len, 4, key);
      return i >= 0 ? load<usize>(c.items + (<usize>i << 2)) : UNDEFINED;
    }
  }
  return UNDEFINED;
}
