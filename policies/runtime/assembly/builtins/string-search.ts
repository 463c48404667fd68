// Byte-string helpers shared by the string builtins. Searching bytes is exact for UTF-8: a valid
// encoded needle can only match at a code point boundary of valid text.

import { alloc } from "../heap";
import { Value, TYPE_STRING, stringValue } from "../value";

/**
 * Index of the first occurrence of the needle at or after `from`, or -1. Candidates are compared
 * byte by byte, which is quickest on the text policies see; but a request's text can make every
 * candidate match almost the whole needle (`"aaa…a"` searched for `"aa…ab"`: 300 KB took 30 s),
 * so once the bytes compared outgrow the text scanned the search goes on in linear time (KMP).
 */
export function indexOfBytes(hay: usize, hayLen: i32, needle: usize, needleLen: i32, from: i32): i32 {
  if (needleLen == 0) return from <= hayLen ? from : -1;
  const first = load<u8>(needle);
  const last = hayLen - needleLen;
  let compared: i64 = 0;
  for (let i = from; i <= last; i++) {
    const at = hay + <usize>i;
    if (load<u8>(at) != first) continue;
    const k = matchedPrefix(at, needle, needleLen);
    if (k == needleLen) return i;
    compared += k;
    if (compared > 2 * <i64>(i - from) + 64) return indexOfBytesLinear(hay, hayLen, needle, needleLen, i + 1);
  }
  return -1;
}

/** How many of the `n` bytes at `a` and at `b` agree before the first that differs. */
export function matchedPrefix(a: usize, b: usize, n: i32): i32 {
  let k = 0;
  while (k < n && load<u8>(a + <usize>k) == load<u8>(b + <usize>k)) k++;
  return k;
}

/** `indexOfBytes` by Knuth–Morris–Pratt: O(hay + needle) whatever the bytes. */
function indexOfBytesLinear(hay: usize, hayLen: i32, needle: usize, needleLen: i32, from: i32): i32 {
  const border = bordersOf(needle, needleLen);
  for (let i = from, k = 0; i < hayLen; i++) {
    k = extendMatch(needle, border, k, load<u8>(hay + <usize>i));
    if (k == needleLen) return i - needleLen + 1;
  }
  return -1;
}

/** How many matches the last `indexesOfBytes` found. */
export let matchCount: i32 = 0;

/**
 * Every index at which the needle occurs, overlapping ones too, as i32s at the address returned
 * (`matchCount` of them), in one linear pass: searching again from each match would cost the
 * needle's length per match, quadratic for `"aa…a"` in `"aaa…a"`.
 */
export function indexesOfBytes(hay: usize, hayLen: i32, needle: usize, needleLen: i32): usize {
  const border = bordersOf(needle, needleLen);
  const found = alloc(<usize>(hayLen >= needleLen ? hayLen - needleLen + 1 : 0) << 2);
  matchCount = 0;
  for (let i = 0, k = 0; i < hayLen; i++) {
    k = extendMatch(needle, border, k, load<u8>(hay + <usize>i));
    if (k < needleLen) continue;
    store<i32>(found + (<usize>matchCount << 2), i - needleLen + 1);
    matchCount++;
    k = load<i32>(border + (<usize>(needleLen - 1) << 2));
  }
  return found;
}

/** border[q]: the length of the longest proper prefix of needle[0..q] that is also its suffix. */
function bordersOf(needle: usize, needleLen: i32): usize {
  const border = alloc(<usize>needleLen << 2);
  store<i32>(border, 0);
  for (let q = 1, k = 0; q < needleLen; q++) {
    k = extendMatch(needle, border, k, load<u8>(needle + <usize>q));
    store<i32>(border + (<usize>q << 2), k);
  }
  return border;
}

/** The matched prefix length after byte `c`, from `k` bytes matched. */
// @ts-ignore: decorator
@inline
function extendMatch(needle: usize, border: usize, k: i32, c: u8): i32 {
  while (k > 0 && load<u8>(needle + <usize>k) != c) k = load<i32>(border + (<usize>(k - 1) << 2));
  return load<u8>(needle + <usize>k) == c ? k + 1 : k;
}

/** Whether the bytes at `p` start with the prefix. */
export function hasPrefix(p: usize, len: i32, prefix: usize, prefixLen: i32): bool {
  return prefixLen <= len && memory.compare(p, prefix, <usize>prefixLen) == 0;
}

/** Whether the bytes at `p` end with the suffix. */
export function hasSuffix(p: usize, len: i32, suffix: usize, suffixLen: i32): bool {
  return suffixLen <= len && memory.compare(p + <usize>(len - suffixLen), suffix, <usize>suffixLen) == 0;
}

/**
 * The part [from, to) of string `s` (whose bytes are at `data`, `len` long): `s` itself when that
 * is all of it, else a string sharing its bytes, which are immutable.
 */
export function substringOf(s: Value, data: usize, len: i32, from: i32, to: i32): Value {
  if (from == 0 && to == len) return s;
  return stringValue(data + <usize>from, to - from);
}

// A string value (tag, length 0, no bytes) in static memory, like the runtime's null and booleans.
const EMPTY_STRING: Value = memory.data<u8>([TYPE_STRING, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 8);

/** The empty string, shared. */
export function emptyString(): Value {
  return EMPTY_STRING;
}
