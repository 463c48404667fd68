// trim, trim_left, trim_right, trim_prefix, trim_suffix, trim_space, as Go's strings.Trim*
// functions behind OPA's builtins: a cutset is a set of code points, not a prefix or suffix.

import { Value, UNDEFINED, isString, stringData, stringLength } from "../value";
import { hasPrefix, hasSuffix, substringOf } from "./string-search";
import { decodeLastRune, decodeRune, isSpace, runeSize } from "./utf8";

// The cutset of the current call: a bitmap when it is all ASCII (the common case), else its
// bytes, searched code point by code point.
let asciiLow: u64 = 0;
let asciiHigh: u64 = 0;
let cutsetIsAscii = true;
let cutsetData: usize = 0;
let cutsetEnd: usize = 0;

function useCutset(data: usize, len: i32): void {
  asciiLow = 0;
  asciiHigh = 0;
  cutsetIsAscii = true;
  cutsetData = data;
  cutsetEnd = data + <usize>len;
  for (let p = data; p < cutsetEnd; p++) {
    const b = <u64>load<u8>(p);
    if (b >= 0x80) {
      cutsetIsAscii = false;
      return;
    }
    if (b < 64) asciiLow |= <u64>1 << b;
    else asciiHigh |= <u64>1 << (b - 64);
  }
}

/** Whether the cutset holds `r` (U+FFFD also stands for any invalid byte, as in Go). */
function inCutset(r: i32): bool {
  if (cutsetIsAscii) {
    if (r >= 0x80) return false;
    return r < 64 ? (asciiLow & (<u64>1 << <u64>r)) != 0 : (asciiHigh & (<u64>1 << <u64>(r - 64))) != 0;
  }
  for (let p = cutsetData; p < cutsetEnd; p += <usize>runeSize) {
    if (decodeRune(p, cutsetEnd) == r) return true;
  }
  return false;
}

// Code points matching the current test are taken off one end; these return the new bound.
// The test is the cutset, or white space when `spaces` is set.

function trimmedStart(data: usize, from: i32, to: i32, spaces: bool): i32 {
  const end = data + <usize>to;
  let i = from;
  while (i < to) {
    const r = decodeRune(data + <usize>i, end);
    const size = runeSize;
    if (!(spaces ? isSpace(r) : inCutset(r))) break;
    i += size;
  }
  return i;
}

function trimmedEnd(data: usize, from: i32, to: i32, spaces: bool): i32 {
  const start = data + <usize>from;
  let i = to;
  while (i > from) {
    const r = decodeLastRune(start, data + <usize>i);
    const size = runeSize;
    if (!(spaces ? isSpace(r) : inCutset(r))) break;
    i -= size;
  }
  return i;
}

// Which ends a cutset trim works on.
// @ts-ignore: decorator
@inline const LEFT: i32 = 1;
// @ts-ignore: decorator
@inline const RIGHT: i32 = 2;

function trimCutset(s: Value, cutset: Value, ends: i32): Value {
  if (!isString(s) || !isString(cutset)) return UNDEFINED;
  const data = stringData(s);
  const len = stringLength(s);
  if (len == 0 || stringLength(cutset) == 0) return s;
  useCutset(stringData(cutset), stringLength(cutset));
  const to = ends & RIGHT ? trimmedEnd(data, 0, len, false) : len;
  const from = ends & LEFT ? trimmedStart(data, 0, to, false) : 0;
  return substringOf(s, data, len, from, to);
}

export function bi_trim(s: Value, cutset: Value): Value {
  return trimCutset(s, cutset, LEFT | RIGHT);
}

export function bi_trim_left(s: Value, cutset: Value): Value {
  return trimCutset(s, cutset, LEFT);
}

export function bi_trim_right(s: Value, cutset: Value): Value {
  return trimCutset(s, cutset, RIGHT);
}

/** Leading and trailing Unicode white space removed. */
export function bi_trim_space(s: Value): Value {
  if (!isString(s)) return UNDEFINED;
  const data = stringData(s);
  const len = stringLength(s);
  const from = trimmedStart(data, 0, len, true);
  const to = trimmedEnd(data, from, len, true);
  return substringOf(s, data, len, from, to);
}

export function bi_trim_prefix(s: Value, prefix: Value): Value {
  if (!isString(s) || !isString(prefix)) return UNDEFINED;
  const data = stringData(s);
  const len = stringLength(s);
  const n = stringLength(prefix);
  return hasPrefix(data, len, stringData(prefix), n) ? substringOf(s, data, len, n, len) : s;
}

export function bi_trim_suffix(s: Value, suffix: Value): Value {
  if (!isString(s) || !isString(suffix)) return UNDEFINED;
  const data = stringData(s);
  const len = stringLength(s);
  const n = stringLength(suffix);
  return hasSuffix(data, len, stringData(suffix), n) ? substringOf(s, data, len, 0, len - n) : s;
}
