// String builtins: concat, split, replace, strings.replace_n, startswith, endswith, contains,
// indexof, indexof_n, substring, strings.reverse, strings.count, strings.any_prefix_match,
// strings.any_suffix_match.
// Positions that Rego exposes (indexof, substring) count code points, as OPA does; results that
// are pieces of an operand share its bytes instead of copying them.

import { abortWithMessage } from "../abort";
import { alloc } from "../heap";
import {
  Value, UNDEFINED, TYPE_ARRAY, TYPE_SET,
  typeOf, isString, isObject, stringValue, stringData, stringLength, booleanValue, intValue,
  numberIntOf, newArray, arrayAppend, collectionLength, collectionItems, objectLength, objectKeyAt,
  objectValueAt,
} from "../value";
import { emptyString, hasPrefix, hasSuffix, indexesOfBytes, indexOfBytes, matchCount, matchedPrefix, substringOf } from "./string-search";
import { isIntOperand } from "./operands";
import { output } from "./text-buffer";
import { byteOffsetOfRune, decodeLastRune, decodeRune, replacedLength, runeCount, runeSize, withReplacedInvalid } from "./utf8";

/** The strings of an array or set joined with the delimiter; undefined if any is not a string. */
export function bi_concat(delimiter: Value, collection: Value): Value {
  const tag = typeOf(collection);
  if (!isString(delimiter) || (tag != TYPE_ARRAY && tag != TYPE_SET)) return UNDEFINED;
  const n = collectionLength(collection);
  const items = collectionItems(collection);
  let total = 0;
  for (let i = 0; i < n; i++) {
    const s = load<Value>(items + (<usize>i << 2));
    if (!isString(s)) return UNDEFINED;
    total += stringLength(s);
  }
  if (n == 0) return emptyString();
  if (n == 1) return load<Value>(items);
  const delimiterData = stringData(delimiter);
  const delimiterLength = stringLength(delimiter);
  total += delimiterLength * (n - 1);
  const data = alloc(<usize>total);
  let at = data;
  for (let i = 0; i < n; i++) {
    if (i > 0) {
      memory.copy(at, delimiterData, <usize>delimiterLength);
      at += <usize>delimiterLength;
    }
    const s = load<Value>(items + (<usize>i << 2));
    const len = stringLength(s);
    memory.copy(at, stringData(s), <usize>len);
    at += <usize>len;
  }
  return stringValue(data, total);
}

/**
 * The pieces between occurrences of the delimiter (Go's strings.Split). An empty delimiter splits
 * into code points (an invalid byte is a piece of its own); text without the delimiter is the
 * only piece.
 */
export function bi_split(s: Value, delimiter: Value): Value {
  if (!isString(s) || !isString(delimiter)) return UNDEFINED;
  const data = stringData(s);
  const len = stringLength(s);
  const delimiterData = stringData(delimiter);
  const delimiterLength = stringLength(delimiter);
  if (delimiterLength == 0) {
    const result = newArray(runeCount(data, len));
    const end = data + <usize>len;
    for (let p = data; p < end; p += <usize>runeSize) {
      decodeRune(p, end);
      arrayAppend(result, stringValue(p, runeSize));
    }
    return result;
  }
  let count = 0;
  for (let i = indexOfBytes(data, len, delimiterData, delimiterLength, 0); i >= 0; count++) {
    i = indexOfBytes(data, len, delimiterData, delimiterLength, i + delimiterLength);
  }
  const result = newArray(count + 1);
  let from = 0;
  for (let k = 0; k < count; k++) {
    const at = indexOfBytes(data, len, delimiterData, delimiterLength, from);
    arrayAppend(result, substringOf(s, data, len, from, at));
    from = at + delimiterLength;
  }
  arrayAppend(result, substringOf(s, data, len, from, len));
  return result;
}

/**
 * Every non-overlapping occurrence of `old` replaced, left to right. An empty `old` matches
 * before every code point and at the end.
 */
export function bi_replace(s: Value, old: Value, replacement: Value): Value {
  if (!isString(s) || !isString(old) || !isString(replacement)) return UNDEFINED;
  const data = stringData(s);
  const len = stringLength(s);
  const oldData = stringData(old);
  const oldLength = stringLength(old);
  const newData = stringData(replacement);
  const newLength = stringLength(replacement);
  output.begin();
  if (oldLength == 0) {
    const end = data + <usize>len;
    for (let p = data; p < end; p += <usize>runeSize) {
      output.bytes(newData, newLength);
      decodeRune(p, end);
      output.bytes(p, runeSize);
    }
    output.bytes(newData, newLength);
    return output.toStringCopy();
  }
  let at = indexOfBytes(data, len, oldData, oldLength, 0);
  if (at < 0) return s;
  let from = 0;
  while (at >= 0) {
    output.bytes(data + <usize>from, at - from);
    output.bytes(newData, newLength);
    from = at + oldLength;
    at = indexOfBytes(data, len, oldData, oldLength, from);
  }
  output.bytes(data + <usize>from, len - from);
  return output.toStringCopy();
}

/**
 * Every key of `patterns` replaced by its value, as Go's strings.NewReplacer does it for OPA: one
 * left-to-right pass over the bytes, without overlaps, where at each position the first key in
 * value order that matches wins (not the longest). An empty key matches at every byte position,
 * but not twice in a row, so a longer key may match where it just did. Undefined unless every key
 * and value is a string.
 */
export function bi_strings_replace_n(patterns: Value, s: Value): Value {
  if (!isObject(patterns) || !isString(s)) return UNDEFINED;
  const n = objectLength(patterns);
  for (let k = 0; k < n; k++) {
    if (!isString(objectKeyAt(patterns, k)) || !isString(objectValueAt(patterns, k))) return UNDEFINED;
  }
  const data = stringData(s);
  const len = stringLength(s);
  replaceCompared = 0;
  output.begin();
  let from = 0;
  let afterEmptyMatch = false;
  let at = 0;
  while (at <= len) {
    const k = firstKeyAt(patterns, data + <usize>at, len - at, afterEmptyMatch);
    if (k < 0) {
      afterEmptyMatch = false;
      at++;
      continue;
    }
    const key = objectKeyAt(patterns, k);
    const value = objectValueAt(patterns, k);
    output.bytes(data + <usize>from, at - from);
    output.bytes(stringData(value), stringLength(value));
    at += stringLength(key);
    from = at;
    afterEmptyMatch = stringLength(key) == 0;
  }
  output.bytes(data + <usize>from, len - from);
  return output.toStringCopy();
}

/**
 * The bytes one `strings.replace_n` may compare. Each position is tried against every key, as
 * Go's replacer tries them, which costs up to a key's length when the text nearly matches it
 * (`"aaa…"` against the key `"aa…ab"`): a request's text could hold the event loop for seconds.
 * Past the budget the evaluation fails, as a size budget does (numbers.ts); ordinary text compares
 * about a byte per key and position.
 */
// @ts-ignore: decorator
@inline const REPLACE_MAX_COMPARED: i64 = 100000000;
let replaceCompared: i64 = 0;

/** The index of the first key of `patterns` the `len` bytes at `p` start with, or -1. */
function firstKeyAt(patterns: Value, p: usize, len: i32, skipEmpty: bool): i32 {
  const n = objectLength(patterns);
  for (let k = 0; k < n; k++) {
    const key = objectKeyAt(patterns, k);
    const keyLength = stringLength(key);
    if (keyLength == 0 && skipEmpty) continue;
    if (keyLength > len) continue;
    const same = matchedPrefix(p, stringData(key), keyLength);
    replaceCompared += same + 1;
    if (replaceCompared > REPLACE_MAX_COMPARED) abortWithMessage("size budget: strings.replace_n compares at most 100000000 bytes");
    if (same == keyLength) return k;
  }
  return -1;
}

export function bi_startswith(s: Value, prefix: Value): Value {
  if (!isString(s) || !isString(prefix)) return UNDEFINED;
  return booleanValue(hasPrefix(stringData(s), stringLength(s), stringData(prefix), stringLength(prefix)));
}

export function bi_endswith(s: Value, suffix: Value): Value {
  if (!isString(s) || !isString(suffix)) return UNDEFINED;
  return booleanValue(hasSuffix(stringData(s), stringLength(s), stringData(suffix), stringLength(suffix)));
}

export function bi_contains(s: Value, part: Value): Value {
  if (!isString(s) || !isString(part)) return UNDEFINED;
  return booleanValue(indexOfBytes(stringData(s), stringLength(s), stringData(part), stringLength(part), 0) >= 0);
}

/**
 * Code point index of the first occurrence, or -1; undefined for an empty search string. OPA
 * compares code points, each invalid byte read as U+FFFD, so both texts are searched so read.
 */
export function bi_indexof(s: Value, search: Value): Value {
  if (!isString(s) || !isString(search) || stringLength(search) == 0) return UNDEFINED;
  const data = withReplacedInvalid(stringData(s), stringLength(s));
  const len = replacedLength;
  const needle = withReplacedInvalid(stringData(search), stringLength(search));
  const at = indexOfBytes(data, len, needle, replacedLength, 0);
  return intValue(at < 0 ? -1 : runeCount(data, at));
}

/**
 * The code point index of every occurrence, overlapping ones included, in order; undefined for an
 * empty search string. Code points are compared as in `indexof`.
 */
export function bi_indexof_n(s: Value, search: Value): Value {
  if (!isString(s) || !isString(search) || stringLength(search) == 0) return UNDEFINED;
  const data = withReplacedInvalid(stringData(s), stringLength(s));
  const len = replacedLength;
  const needle = withReplacedInvalid(stringData(search), stringLength(search));
  const found = indexesOfBytes(data, len, needle, replacedLength);
  const result = newArray(matchCount);
  let runes = 0;
  let counted = 0;
  for (let i = 0; i < matchCount; i++) {
    const at = load<i32>(found + (<usize>i << 2));
    runes += runeCount(data + <usize>counted, at - counted);
    counted = at;
    arrayAppend(result, intValue(runes));
  }
  return result;
}

/**
 * `length` code points from code point `start` (to the end when `length` is negative); empty
 * past the end, undefined for a negative start or non-integer positions.
 */
export function bi_substring(s: Value, start: Value, length: Value): Value {
  if (!isString(s) || !isIntOperand(start) || !isIntOperand(length)) return UNDEFINED;
  const first = numberIntOf(start);
  const count = numberIntOf(length);
  if (first < 0) return UNDEFINED;
  const data = stringData(s);
  const len = stringLength(s);
  // No string has more code points than bytes, so clamping to the byte length loses nothing.
  const from = byteOffsetOfRune(data, len, <i32>min(first, <i64>len));
  if (from == len) return emptyString();
  const to = count < 0 ? len : from + byteOffsetOfRune(data + <usize>from, len - from, <i32>min(count, <i64>len));
  return substringOf(s, data, len, from, to);
}

/** The code points in reverse order; an invalid byte becomes U+FFFD, as Go's `[]rune(s)` makes it. */
export function bi_strings_reverse(s: Value): Value {
  if (!isString(s)) return UNDEFINED;
  const data = stringData(s);
  output.begin();
  for (let end = data + <usize>stringLength(s); end > data; end -= <usize>runeSize) {
    output.rune(decodeLastRune(data, end));
  }
  return output.toStringCopy();
}

/** Non-overlapping occurrences (Go's strings.Count): an empty substring counts code points + 1. */
export function bi_strings_count(s: Value, substring: Value): Value {
  if (!isString(s) || !isString(substring)) return UNDEFINED;
  const data = stringData(s);
  const len = stringLength(s);
  const partLength = stringLength(substring);
  if (partLength == 0) return intValue(runeCount(data, len) + 1);
  const part = stringData(substring);
  let count = 0;
  for (let i = indexOfBytes(data, len, part, partLength, 0); i >= 0; count++) {
    i = indexOfBytes(data, len, part, partLength, i + partLength);
  }
  return intValue(count);
}

/** Whether an operand is a string, or an array or set of strings. */
function isStrings(v: Value): bool {
  if (isString(v)) return true;
  const tag = typeOf(v);
  if (tag != TYPE_ARRAY && tag != TYPE_SET) return false;
  const items = collectionItems(v);
  for (let i = 0; i < collectionLength(v); i++) {
    if (!isString(load<Value>(items + (<usize>i << 2)))) return false;
  }
  return true;
}

/** The strings of an operand `isStrings` accepted: the string itself or the collection's items. */
function stringCount(v: Value): i32 {
  return isString(v) ? 1 : collectionLength(v);
}

function stringAt(v: Value, i: i32): Value {
  return isString(v) ? v : load<Value>(collectionItems(v) + (<usize>i << 2));
}

/** Whether any string of `search` starts (or ends) with any string of `base`. */
function anyAffixMatch(search: Value, base: Value, suffix: bool): Value {
  if (!isStrings(search) || !isStrings(base)) return UNDEFINED;
  for (let i = 0; i < stringCount(search); i++) {
    const s = stringAt(search, i);
    for (let j = 0; j < stringCount(base); j++) {
      const b = stringAt(base, j);
      const found = suffix
        ? hasSuffix(stringData(s), stringLength(s), stringData(b), stringLength(b))
        : hasPrefix(stringData(s), stringLength(s), stringData(b), stringLength(b));
      if (found) return booleanValue(true);
    }
  }
  return booleanValue(false);
}

export function bi_strings_any_prefix_match(search: Value, base: Value): Value {
  return anyAffixMatch(search, base, false);
}

export function bi_strings_any_suffix_match(search: Value, base: Value): Value {
  return anyAffixMatch(search, base, true);
}
