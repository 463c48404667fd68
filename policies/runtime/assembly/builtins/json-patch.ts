// json.patch: RFC 6902 operations as OPA applies them (topdown/json.go), to any value, sets
// included. A path is a JSON pointer string ("/a/0", "" for the whole document; every leading
// "/" is dropped, "~1" is "/" and "~0" is "~") or an array of keys of any type. Every
// operation returns a new document; the first one that fails makes the whole patch undefined, as
// do a malformed operation or a patch list that is not an array.

import {
  Value, UNDEFINED, TYPE_ARRAY, TYPE_OBJECT, TYPE_SET, TYPE_NUMBER, TYPE_STRING, NUMBER_INT,
  typeOf, isArray, isObject, isString, numberKind, numberIntOf,
  stringValue, stringData, stringLength, valuesEqual, shallowCopy,
  newArray, arrayLength, arrayGet, arrayAppend, arraySet,
  objectGet, objectGetBytes, objectInsert, newObject, objectLength, objectKeyAt, objectValueAt,
  newSet, setAdd, setDifference, compareValues, getMember,
} from "../value";
import { alloc } from "../heap";

// The attribute and operation names, as bytes: (offset, length) pairs below.
const NAMES = memory.data<u8>([
  0x6f, 0x70, // op
  0x70, 0x61, 0x74, 0x68, // path
  0x76, 0x61, 0x6c, 0x75, 0x65, // value
  0x66, 0x72, 0x6f, 0x6d, // from
  0x61, 0x64, 0x64, // add
  0x72, 0x65, 0x6d, 0x6f, 0x76, 0x65, // remove
  0x72, 0x65, 0x70, 0x6c, 0x61, 0x63, 0x65, // replace
  0x6d, 0x6f, 0x76, 0x65, // move
  0x63, 0x6f, 0x70, 0x79, // copy
  0x74, 0x65, 0x73, 0x74, // test
]);

function attribute(op: Value, offset: usize, len: i32): Value {
  return objectGetBytes(op, NAMES + offset, len);
}

function isName(v: Value, offset: usize, len: i32): bool {
  return stringLength(v) == len && memory.compare(stringData(v), NAMES + offset, len) == 0;
}

/**
 * The keys of a path as OPA's parsePath reads one (json.patch, json.filter, json.remove): a JSON
 * pointer string or an array of keys; 0 when it is neither a string nor an array.
 */
export function parsePath(path: Value): Value {
  if (isArray(path)) return path;
  if (!isString(path)) return UNDEFINED;
  const data = stringData(path);
  const len = stringLength(path);
  const keys = newArray(0);
  if (len == 0) return keys;
  let start = 0;
  while (start < len && load<u8>(data + <usize>start) == 0x2f) start++;
  for (let from = start; ; ) {
    let to = from;
    while (to < len && load<u8>(data + <usize>to) != 0x2f) to++;
    arrayAppend(keys, unescapeSegment(data + <usize>from, to - from));
    if (to == len) break;
    from = to + 1;
  }
  return keys;
}

/** A pointer segment with "~1" read as "/" and "~0" as "~" (the order OPA replaces them in). */
function unescapeSegment(data: usize, len: i32): Value {
  let escapes = 0;
  for (let i = 0; i + 1 < len; i++) {
    const next = load<u8>(data + <usize>i + 1);
    if (load<u8>(data + <usize>i) == 0x7e && (next == 0x30 || next == 0x31)) {
      escapes++;
      i++;
    }
  }
  if (escapes == 0) return stringValue(data, len);
  const out = alloc(<usize>(len - escapes));
  let w: usize = 0;
  for (let i = 0; i < len; i++) {
    const c = load<u8>(data + <usize>i);
    const next = i + 1 < len ? load<u8>(data + <usize>i + 1) : 0;
    if (c == 0x7e && (next == 0x30 || next == 0x31)) {
      store<u8>(out + w++, next == 0x31 ? 0x2f : 0x7e);
      i++;
    } else {
      store<u8>(out + w++, c);
    }
  }
  return stringValue(out, len - escapes);
}

// An array index as OPA reads a path key: an integer number, "-" for the end, or a string of
// an integer in decimal (a sign allowed, as strconv.ParseInt takes one; no leading zero).
// NO_INDEX when the key is none of these, which no array holds.
// @ts-ignore: decorator
@inline const NO_INDEX: i64 = i64.MIN_VALUE;
// Indexes are compared with array lengths only, so a larger one stands for any larger one.
// @ts-ignore: decorator
@inline const FAR_INDEX: i64 = 1 << 40;

function toIndex(array: Value, key: Value): i64 {
  const tag = typeOf(key);
  if (tag == TYPE_NUMBER) return numberKind(key) == NUMBER_INT ? numberIntOf(key) : NO_INDEX;
  if (tag != TYPE_STRING) return NO_INDEX;
  const data = stringData(key);
  const len = stringLength(key);
  const first = len > 0 ? load<u8>(data) : 0;
  if (len == 1 && first == 0x2d) return <i64>arrayLength(array);
  if (len > 1 && first == 0x30) return NO_INDEX;
  const signed = first == 0x2b || first == 0x2d;
  if (len == <i32>signed) return NO_INDEX;
  let n: i64 = 0;
  for (let i = <i32>signed; i < len; i++) {
    const d = <i64>load<u8>(data + <usize>i) - 0x30;
    if (d < 0 || d > 9) return NO_INDEX;
    n = min(n * 10 + d, FAR_INDEX);
  }
  return first == 0x2d ? -n : n;
}

// What the step at the end of a path does to the collection holding it.
// @ts-ignore: decorator
@inline const GET: i32 = 0;
// @ts-ignore: decorator
@inline const ADD: i32 = 1;
// @ts-ignore: decorator
@inline const REMOVE: i32 = 2;

/** The value added by ADD; the value found by GET or taken out by REMOVE. */
let operand: Value = UNDEFINED;
let found: Value = UNDEFINED;

/** A copy of the array without element i. */
function arrayWithout(array: Value, i: i32): Value {
  const n = arrayLength(array);
  const result = newArray(n - 1);
  for (let j = 0; j < n; j++) if (j != i) arrayAppend(result, arrayGet(array, j));
  return result;
}

/** A copy of the array with x before element i (at the end for the length). */
function arrayInserting(array: Value, i: i32, x: Value): Value {
  const n = arrayLength(array);
  const result = newArray(n + 1);
  for (let j = 0; j < i; j++) arrayAppend(result, arrayGet(array, j));
  arrayAppend(result, x);
  for (let j = i; j < n; j++) arrayAppend(result, arrayGet(array, j));
  return result;
}

function objectWithout(object: Value, key: Value): Value {
  const n = objectLength(object);
  const result = newObject(n);
  for (let i = 0; i < n; i++) {
    const k = objectKeyAt(object, i);
    if (compareValues(k, key) != 0) objectInsert(result, k, objectValueAt(object, i));
  }
  return result;
}

function setWithout(set: Value, x: Value): Value {
  const removed = newSet(1);
  setAdd(removed, x);
  return setDifference(set, removed);
}

/**
 * The member a key names in a collection (for a set, the element equal to the key), or 0: an
 * array index must be within bounds.
 */
function memberAt(parent: Value, key: Value): Value {
  switch (typeOf(parent)) {
    case TYPE_OBJECT:
      return objectGet(parent, key);
    case TYPE_ARRAY: {
      const i = toIndex(parent, key);
      return i >= 0 && i < <i64>arrayLength(parent) ? arrayGet(parent, <i32>i) : UNDEFINED;
    }
    case TYPE_SET:
      return getMember(parent, key);
  }
  return UNDEFINED;
}

/** A copy of the collection with `member`, found under `key`, taken out (`updated` 0) or replaced by `updated`. */
function replaceMember(parent: Value, key: Value, member: Value, updated: Value): Value {
  switch (typeOf(parent)) {
    case TYPE_OBJECT: {
      if (!updated) return objectWithout(parent, key);
      const result = shallowCopy(parent);
      objectInsert(result, key, updated);
      return result;
    }
    case TYPE_ARRAY: {
      const i = <i32>toIndex(parent, key);
      if (!updated) return arrayWithout(parent, i);
      const result = shallowCopy(parent);
      arraySet(result, i, updated);
      return result;
    }
  }
  const result = setWithout(parent, member);
  if (updated) setAdd(result, updated);
  return result;
}

/** A copy of the collection with `value` added under `key`, or 0 where it cannot go. */
function addMember(parent: Value, key: Value, value: Value): Value {
  switch (typeOf(parent)) {
    case TYPE_OBJECT: {
      const result = shallowCopy(parent);
      objectInsert(result, key, value);
      return result;
    }
    case TYPE_ARRAY: {
      const i = toIndex(parent, key);
      return i >= 0 && i <= <i64>arrayLength(parent) ? arrayInserting(parent, <i32>i, value) : UNDEFINED;
    }
    case TYPE_SET: {
      // A set member is its own key: adding puts the key in, and only when it is the value.
      if (!valuesEqual(key, value)) return UNDEFINED;
      const result = shallowCopy(parent);
      setAdd(result, key);
      return result;
    }
  }
  return UNDEFINED;
}

/**
 * The document with `step` done at the end of `path` (from key `i` on): the collections along
 * the path are copied with the changed child in place; 0 when a key leads nowhere. GET and
 * REMOVE leave the member they reach in `found`; GET returns the document as it is.
 */
function traverse(doc: Value, path: Value, i: i32, step: i32): Value {
  const key = arrayGet(path, i);
  if (i == arrayLength(path) - 1) {
    if (step == ADD) return addMember(doc, key, operand);
    found = memberAt(doc, key);
    if (!found) return UNDEFINED;
    return step == GET ? doc : replaceMember(doc, key, found, UNDEFINED);
  }
  const child = memberAt(doc, key);
  if (!child) return UNDEFINED;
  const updated = traverse(child, path, i + 1, step);
  if (!updated) return UNDEFINED;
  return step == GET ? doc : replaceMember(doc, key, child, updated);
}

function patchGet(doc: Value, path: Value): Value {
  if (arrayLength(path) == 0) return doc;
  return traverse(doc, path, 0, GET) ? found : UNDEFINED;
}

function patchAdd(doc: Value, path: Value, value: Value): Value {
  if (arrayLength(path) == 0) return value;
  operand = value;
  return traverse(doc, path, 0, ADD);
}

/** The document without the value at path (kept in `found`), or 0. */
function patchRemove(doc: Value, path: Value): Value {
  if (arrayLength(path) == 0) return UNDEFINED;
  return traverse(doc, path, 0, REMOVE);
}

/** One operation applied to doc: the new document, or 0 when it fails or is malformed. */
function applyOperation(doc: Value, op: Value): Value {
  if (!isObject(op)) return UNDEFINED;
  const name = attribute(op, 0, 2);
  if (!isString(name)) return UNDEFINED;
  const path = parsePath(attribute(op, 2, 4));
  if (!path) return UNDEFINED;
  const value = attribute(op, 6, 5);
  if (isName(name, 15, 3)) return value ? patchAdd(doc, path, value) : UNDEFINED;
  if (isName(name, 18, 6)) return patchRemove(doc, path);
  if (isName(name, 24, 7)) {
    // Replace is a remove followed by an add, so the path must exist already.
    if (!value) return UNDEFINED;
    if (arrayLength(path) == 0) return value;
    const removed = patchRemove(doc, path);
    return removed ? patchAdd(removed, path, value) : UNDEFINED;
  }
  if (isName(name, 31, 4) || isName(name, 35, 4)) {
    const from = parsePath(attribute(op, 11, 4));
    if (!from) return UNDEFINED;
    if (isName(name, 31, 4)) {
      const rest = patchRemove(doc, from);
      return rest ? patchAdd(rest, path, found) : UNDEFINED;
    }
    const copied = patchGet(doc, from);
    return copied ? patchAdd(doc, path, copied) : UNDEFINED;
  }
  if (isName(name, 39, 4)) {
    if (!value) return UNDEFINED;
    const actual = patchGet(doc, path);
    return actual && valuesEqual(actual, value) ? doc : UNDEFINED;
  }
  return UNDEFINED;
}

export function bi_json_patch(doc: Value, patches: Value): Value {
  if (!doc || !isArray(patches)) return UNDEFINED;
  let result = doc;
  const n = arrayLength(patches);
  for (let i = 0; i < n && result; i++) result = applyOperation(result, arrayGet(patches, i));
  return result;
}
