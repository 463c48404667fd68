// urlquery.encode, urlquery.decode, urlquery.encode_object, urlquery.decode_object: a query
// component as Go's net/url escapes and reads it (QueryEscape, QueryUnescape, Values.Encode,
// ParseQuery), byte by byte, so escapes may stand for text that is not valid UTF-8.

import {
  Value, UNDEFINED, isString, isObject, isArray, isSet, stringData, stringLength,
  objectLength, objectKeyAt, objectValueAt, objectGet, objectInsert, newObject, newArray, arrayAppend,
  collectionLength, collectionItems,
} from "../value";
import { hasOnlyStringKeys, keyNames, shadowed } from "./go-json";
import { output, rewrittenString, TextBuffer } from "./text-buffer";
import { hexDigitValue } from "./uuid";

// @ts-ignore: decorator
@inline
function isUnreserved(c: i32): bool {
  return (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a) || c == 0x2d || c == 0x2e || c == 0x5f || c == 0x7e;
}

// @ts-ignore: decorator
@inline
function upperHexDigit(v: i32): i32 {
  return v < 10 ? 0x30 + v : 0x37 + v;
}

/**
 * Go's url.QueryEscape: letters, digits and `-._~` as they are, space as `+`, any other byte as
 * `%XX`; takes any bytes.
 */
function appendQueryEscaped(out: TextBuffer, p: usize, len: i32): bool {
  for (let i = 0; i < len; i++) {
    const c = <i32>load<u8>(p + <usize>i);
    if (isUnreserved(c)) {
      out.byte(c);
    } else if (c == 0x20) {
      out.byte(0x2b);
    } else {
      out.byte(0x25);
      out.byte(upperHexDigit(c >> 4));
      out.byte(upperHexDigit(c & 15));
    }
  }
  return true;
}

/** Go's url.QueryUnescape: `+` as space, `%XX` as its byte; false for a `%` without two hex digits. */
function appendQueryUnescaped(out: TextBuffer, p: usize, len: i32): bool {
  for (let i = 0; i < len; i++) {
    const c = <i32>load<u8>(p + <usize>i);
    if (c == 0x2b) {
      out.byte(0x20);
    } else if (c == 0x25) {
      if (i + 2 >= len) return false;
      const high = hexDigitValue(load<u8>(p + <usize>i, 1));
      const low = hexDigitValue(load<u8>(p + <usize>i, 2));
      if (high < 0 || low < 0) return false;
      out.byte((high << 4) | low);
      i += 2;
    } else {
      out.byte(c);
    }
  }
  return true;
}

/** `len` bytes at `p` unescaped into a new string; undefined for a malformed escape. */
function queryUnescaped(p: usize, len: i32): Value {
  output.begin();
  return appendQueryUnescaped(output, p, len) ? output.toStringCopy() : UNDEFINED;
}

export function bi_urlquery_encode(s: Value): Value {
  return rewrittenString(s, appendQueryEscaped);
}

/** The unescaped string; undefined for a malformed escape. */
export function bi_urlquery_decode(s: Value): Value {
  return rewrittenString(s, appendQueryUnescaped);
}

/** Appends `key=value`, both escaped, after a `&` unless it is the first pair. */
function appendPair(key: usize, keyLength: i32, value: Value): void {
  if (output.len > 0) output.byte(0x26);
  appendQueryEscaped(output, key, keyLength);
  output.byte(0x3d);
  appendQueryEscaped(output, stringData(value), stringLength(value));
}

/**
 * Go's url.Values.Encode of an object whose values are strings, or arrays or sets of strings (a
 * pair for each, none for an empty one), sorted by key; undefined for any other value. OPA
 * converts the object to Go's JSON form first, so a key that is not a string is named by its
 * JSON text (`1`, `[1,2]`), and keys with one name are one key holding the later value
 * (go-json.ts, `keyNames`).
 */
export function bi_urlquery_encode_object(object: Value): Value {
  if (!isObject(object)) return UNDEFINED;
  const n = objectLength(object);
  const entries = hasOnlyStringKeys(object) ? 0 : keyNames(object);
  output.begin();
  for (let i = 0; i < n; i++) {
    let key: usize;
    let keyLength: i32;
    let value: Value;
    if (entries == 0) {
      const k = objectKeyAt(object, i);
      key = stringData(k);
      keyLength = stringLength(k);
      value = objectValueAt(object, i);
    } else {
      if (shadowed(entries, i, n)) continue;
      const at = entries + <usize>i * 12;
      key = load<usize>(at);
      keyLength = load<i32>(at, 4);
      value = objectValueAt(object, load<i32>(at, 8));
    }
    if (isString(value)) {
      appendPair(key, keyLength, value);
      continue;
    }
    if (!isArray(value) && !isSet(value)) return UNDEFINED;
    const items = collectionItems(value);
    const count = collectionLength(value);
    for (let j = 0; j < count; j++) {
      const item = load<Value>(items + (<usize>j << 2));
      if (!isString(item)) return UNDEFINED;
      appendPair(key, keyLength, item);
    }
  }
  return output.toStringCopy();
}

/**
 * Go's url.ParseQuery: `&`-separated `key=value` pairs (no `=`: an empty value; empty pairs
 * skipped), each key's values in order; undefined for a malformed escape or a `;` in a pair,
 * as Go refuses both.
 */
export function bi_urlquery_decode_object(s: Value): Value {
  if (!isString(s)) return UNDEFINED;
  const data = stringData(s);
  const len = stringLength(s);
  const result = newObject(0);
  let from = 0;
  while (from <= len) {
    let to = from;
    let equals = -1;
    for (; to < len; to++) {
      const c = load<u8>(data + <usize>to);
      if (c == 0x26) break;
      if (c == 0x3b) return UNDEFINED;
      if (c == 0x3d && equals < 0) equals = to;
    }
    if (to > from && !addQueryPair(result, data, from, equals < 0 ? to : equals, to)) return UNDEFINED;
    from = to + 1;
  }
  return result;
}

/** Adds the pair `data[from, to)`, its key ending at `keyEnd`, to the object; false if it is malformed. */
function addQueryPair(result: Value, data: usize, from: i32, keyEnd: i32, to: i32): bool {
  const key = queryUnescaped(data + <usize>from, keyEnd - from);
  if (!key) return false;
  const valueStart = keyEnd < to ? keyEnd + 1 : to;
  const value = queryUnescaped(data + <usize>valueStart, to - valueStart);
  if (!value) return false;
  let values = objectGet(result, key);
  if (!values) {
    values = newArray(1);
    objectInsert(result, key, values);
  }
  arrayAppend(values, value);
  return true;
}
