// semver.is_valid, semver.compare: strict Semantic Versioning 2.0.0 (no leading `v`, no leading
// zeros, no surrounding space), compared by precedence with build metadata ignored. Numbers may
// have any number of digits: without leading zeros, the longer is the larger.

import { Value, UNDEFINED, isString, stringData, stringLength, booleanValue, intValue, compareBytes } from "../value";

// A parsed version: the byte offsets [start, end) of major, minor, patch and the pre-release
// (empty when there is none), eight i32s.
// @ts-ignore: decorator
@inline const PRERELEASE: i32 = 3;
const FIRST = memory.data(32, 4);
const SECOND = memory.data(32, 4);

// @ts-ignore: decorator
@inline
function isDigit(c: u8): bool {
  return c >= 0x30 && c <= 0x39;
}

// @ts-ignore: decorator
@inline
function isIdentifierByte(c: u8): bool {
  return isDigit(c) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c == 0x2d;
}

function setPart(v: usize, part: i32, start: i32, end: i32): void {
  store<i32>(v + (<usize>part << 3), start);
  store<i32>(v + (<usize>part << 3), end, 4);
}

// @ts-ignore: decorator
@inline
function partStart(v: usize, part: i32): i32 {
  return load<i32>(v + (<usize>part << 3));
}

// @ts-ignore: decorator
@inline
function partEnd(v: usize, part: i32): i32 {
  return load<i32>(v + (<usize>part << 3), 4);
}

/** Whether the identifier [start, end) is all digits. */
function isNumeric(p: usize, start: i32, end: i32): bool {
  for (let i = start; i < end; i++) if (!isDigit(load<u8>(p + <usize>i))) return false;
  return true;
}

/**
 * The end of the dot-separated identifiers from `i` (at `+` or the end of the text), or -1 if
 * one is empty, holds another byte, or (`numbers` for a pre-release) is a number with a leading
 * zero.
 */
function identifiersEnd(p: usize, i: i32, len: i32, numbers: bool): i32 {
  while (true) {
    const start = i;
    while (i < len && isIdentifierByte(load<u8>(p + <usize>i))) i++;
    if (i == start) return -1;
    if (numbers && i - start > 1 && load<u8>(p + <usize>start) == 0x30 && isNumeric(p, start, i)) return -1;
    if (i == len || load<u8>(p + <usize>i) != 0x2e) return i;
    i++;
  }
}

/** Parses the `len` bytes at `p` into the version record `v`; false if they are not a version. */
function parseVersion(p: usize, len: i32, v: usize): bool {
  let i = 0;
  for (let part = 0; part < 3; part++) {
    const start = i;
    while (i < len && isDigit(load<u8>(p + <usize>i))) i++;
    if (i == start || (i - start > 1 && load<u8>(p + <usize>start) == 0x30)) return false;
    setPart(v, part, start, i);
    if (part < 2) {
      if (i == len || load<u8>(p + <usize>i) != 0x2e) return false;
      i++;
    }
  }
  setPart(v, PRERELEASE, i, i);
  if (i < len && load<u8>(p + <usize>i) == 0x2d) {
    const end = identifiersEnd(p, i + 1, len, true);
    if (end < 0) return false;
    setPart(v, PRERELEASE, i + 1, end);
    i = end;
  }
  if (i < len && load<u8>(p + <usize>i) == 0x2b) i = identifiersEnd(p, i + 1, len, false);
  return i == len;
}

// @ts-ignore: decorator
@inline
function sign(c: i32): i32 {
  return c < 0 ? -1 : i32(c > 0);
}

/** Compares two numbers without leading zeros: by length, then digit by digit. */
function compareNumbers(a: usize, aLen: i32, b: usize, bLen: i32): i32 {
  return aLen != bLen ? (aLen < bLen ? -1 : 1) : sign(compareBytes(a, aLen, b, bLen));
}

/** Numeric identifiers rank below alphanumeric ones and compare as numbers; others by their bytes. */
function compareIdentifiers(a: usize, aLen: i32, b: usize, bLen: i32): i32 {
  const aNumeric = isNumeric(a, 0, aLen);
  const bNumeric = isNumeric(b, 0, bLen);
  if (aNumeric && bNumeric) return compareNumbers(a, aLen, b, bLen);
  if (aNumeric != bNumeric) return aNumeric ? -1 : 1;
  return sign(compareBytes(a, aLen, b, bLen));
}

/** The length of the identifier at `p`, up to the next dot or `end`. */
function identifierLength(p: usize, end: usize): i32 {
  let q = p;
  while (q < end && load<u8>(q) != 0x2e) q++;
  return <i32>(q - p);
}

/** Compares two pre-releases identifier by identifier; the one with more ranks higher when all are equal. */
function comparePrereleases(a: usize, aEnd: usize, b: usize, bEnd: usize): i32 {
  while (a < aEnd && b < bEnd) {
    const aLen = identifierLength(a, aEnd);
    const bLen = identifierLength(b, bEnd);
    const c = compareIdentifiers(a, aLen, b, bLen);
    if (c != 0) return c;
    a += <usize>aLen + 1;
    b += <usize>bLen + 1;
  }
  return a < aEnd ? 1 : b < bEnd ? -1 : 0;
}

export function bi_semver_is_valid(v: Value): Value {
  return booleanValue(isString(v) && parseVersion(stringData(v), stringLength(v), FIRST));
}

/** -1, 0 or 1 as `a` ranks below, with or above `b`; undefined if either is not a version. */
export function bi_semver_compare(a: Value, b: Value): Value {
  if (!isString(a) || !isString(b)) return UNDEFINED;
  const x = stringData(a);
  const y = stringData(b);
  if (!parseVersion(x, stringLength(a), FIRST) || !parseVersion(y, stringLength(b), SECOND)) return UNDEFINED;
  for (let part = 0; part < 3; part++) {
    const c = compareNumbers(
      x + <usize>partStart(FIRST, part), partEnd(FIRST, part) - partStart(FIRST, part),
      y + <usize>partStart(SECOND, part), partEnd(SECOND, part) - partStart(SECOND, part),
    );
    if (c != 0) return intValue(c);
  }
  const xPre = partEnd(FIRST, PRERELEASE) > partStart(FIRST, PRERELEASE);
  const yPre = partEnd(SECOND, PRERELEASE) > partStart(SECOND, PRERELEASE);
  // A pre-release ranks below its release.
  if (!xPre || !yPre) return intValue(i32(xPre == yPre ? 0 : xPre ? -1 : 1));
  return intValue(comparePrereleases(
    x + <usize>partStart(FIRST, PRERELEASE), x + <usize>partEnd(FIRST, PRERELEASE),
    y + <usize>partStart(SECOND, PRERELEASE), y + <usize>partEnd(SECOND, PRERELEASE),
  ));
}
