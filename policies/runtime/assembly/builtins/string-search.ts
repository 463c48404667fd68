// Byte-string helpers shared by the string builtins. Searching bytes is exact for UTF-8: a valid
// encoded needle can only match at a code point boundary of valid text.

import { Value, TYPE_STRING, stringValue } from "../value";

/** Index of the first occurrence of the needle at or after `from`, or -1. */
export function indexOfBytes(hay: usize, hayLen: i32, needle: usize, needleLen: i32, from: i32): i32 {
  if (needleLen == 0) return from <= hayLen ? from : -1;
  const first = load<u8>(needle);
  const last = hayLen - needleLen;
  for (let i = from; i <= last; i++) {
    const at = hay + <usize>i;
    if (load<u8>(at) == first && memory.compare(at + 1, needle + 1, <usize>(needleLen - 1)) == 0) return i;
  }
  return -1;
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
