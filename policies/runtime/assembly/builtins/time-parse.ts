// time.parse_rfc3339_ns and time.parse_duration_ns: Go's `time.Parse(time.RFC3339, s)` and
// `time.ParseDuration(s)`, in exact i64 nanoseconds.

import { parseDecimal } from "../float-parse";
import { Value, UNDEFINED, isString, stringData, stringLength, intValue } from "../value";
import { NS_PER_SECOND, SECONDS_PER_DAY, daysFromCivil, daysInMonth, unixNano, fitsI64, floorDiv, floorMod } from "./calendar";

// @ts-ignore: decorator
@inline
function digitAt(p: usize, i: i32): i32 {
  const d = <i32>load<u8>(p + <usize>i) - 0x30;
  return d >= 0 && d <= 9 ? d : -1;
}

/** The number written by the `count` digits at p + i, or -1 if any is not a digit. */
function digits(p: usize, i: i32, count: i32): i32 {
  let n = 0;
  for (let k = 0; k < count; k++) {
    const d = digitAt(p, i + k);
    if (d < 0) return -1;
    n = n * 10 + d;
  }
  return n;
}

/** Whether byte i of p is `c`. */
// @ts-ignore: decorator
@inline
function byteIs(p: usize, i: i32, c: i32): bool {
  return <i32>load<u8>(p + <usize>i) == c;
}

/**
 * `YYYY-MM-DDTHH:MM:SS`, an optional fraction of a second (`.` or `,` and any number of digits, the
 * first nine kept), then `Z` or `±HH:MM`. The date is checked against the calendar (no February
 * 30) and the fields against their ranges, as Go does; a time outside the i64 nanosecond range
 * (years 1678–2262) is undefined, as OPA refuses it.
 */
export function bi_time_parse_rfc3339_ns(s: Value): Value {
  if (!isString(s)) return UNDEFINED;
  const p = stringData(s);
  const len = stringLength(s);
  if (len < 20 || !byteIs(p, 4, 0x2d) || !byteIs(p, 7, 0x2d) || !byteIs(p, 10, 0x54) || !byteIs(p, 13, 0x3a) || !byteIs(p, 16, 0x3a)) {
    return UNDEFINED;
  }
  const year = digits(p, 0, 4);
  const month = digits(p, 5, 2);
  const day = digits(p, 8, 2);
  const hour = digits(p, 11, 2);
  const minute = digits(p, 14, 2);
  const second = digits(p, 17, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || day > daysInMonth(month, year)) return UNDEFINED;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return UNDEFINED;
  let i = 19;
  let nanos: i64 = 0;
  if (byteIs(p, i, 0x2e) || byteIs(p, i, 0x2c)) {
    const start = ++i;
    while (i < len && digitAt(p, i) >= 0) {
      if (i - start < 9) nanos = nanos * 10 + digitAt(p, i);
      i++;
    }
    if (i == start) return UNDEFINED;
    for (let k = i - start; k < 9; k++) nanos *= 10;
  }
  let offset = 0;
  if (i < len && byteIs(p, i, 0x5a)) {
    i++;
  } else {
    if (i + 6 != len || !(byteIs(p, i, 0x2b) || byteIs(p, i, 0x2d)) || !byteIs(p, i + 3, 0x3a)) return UNDEFINED;
    const offsetHours = digits(p, i + 1, 2);
    const offsetMinutes = digits(p, i + 4, 2);
    if (offsetHours < 0 || offsetHours > 23 || offsetMinutes < 0 || offsetMinutes > 59) return UNDEFINED;
    offset = (offsetHours * 60 + offsetMinutes) * 60 * (byteIs(p, i, 0x2d) ? -1 : 1);
    i += 6;
  }
  if (i != len) return UNDEFINED;
  const seconds = daysFromCivil(year, month, day) * SECONDS_PER_DAY + <i64>(hour * 3600 + minute * 60 + second) - offset;
  const ns = unixNano(floorDiv(seconds, SECONDS_PER_DAY), floorMod(seconds, SECONDS_PER_DAY) * NS_PER_SECOND + nanos);
  return fitsI64 ? intValue(ns) : UNDEFINED;
}

/** Nanoseconds in the duration unit of `len` bytes at p (`ns us µs μs ms s m h`), or 0. */
function unitNs(p: usize, len: i32): i64 {
  const c0 = <i32>load<u8>(p);
  if (len == 1) return c0 == 0x73 ? NS_PER_SECOND : c0 == 0x6d ? 60 * NS_PER_SECOND : c0 == 0x68 ? 3600 * NS_PER_SECOND : 0;
  const last = <i32>load<u8>(p + <usize>(len - 1));
  if (last != 0x73) return 0;
  if (len == 2) return c0 == 0x6e ? 1 : c0 == 0x75 ? 1_000 : c0 == 0x6d ? 1_000_000 : 0;
  // µ (U+00B5 micro sign) and μ (U+03BC Greek mu), both accepted by Go.
  const c1 = <i32>load<u8>(p, 1);
  return len == 3 && ((c0 == 0xc2 && c1 == 0xb5) || (c0 == 0xce && c1 == 0xbc)) ? 1_000 : 0;
}

/**
 * A sequence of `<digits>[.<digits>]<unit>` (Go accepts `1.`, `.5` and even `.` as a number),
 * with an optional sign; `"0"` needs no unit. A fraction is scaled to its unit in floating point
 * and truncated, as Go does; a total beyond the i64 range is undefined.
 */
export function bi_time_parse_duration_ns(s: Value): Value {
  if (!isString(s)) return UNDEFINED;
  const p = stringData(s);
  const len = stringLength(s);
  let i = 0;
  const negative = len > 0 && byteIs(p, 0, 0x2d);
  if (negative || (len > 0 && byteIs(p, 0, 0x2b))) i++;
  if (i + 1 == len && byteIs(p, i, 0x30)) return intValue(0);
  if (i == len) return UNDEFINED;
  const limit: u64 = negative ? <u64>1 << 63 : (<u64>1 << 63) - 1;
  let total: u64 = 0;
  while (i < len) {
    let whole: u64 = 0;
    const start = i;
    for (; i < len && digitAt(p, i) >= 0; i++) {
      whole = whole > limit / 10 ? limit + 1 : min(whole * 10 + <u64>digitAt(p, i), limit + 1);
    }
    const hasPoint = i < len && byteIs(p, i, 0x2e);
    const fractionStart = hasPoint ? ++i : i;
    while (i < len && digitAt(p, i) >= 0) i++;
    const fractionLength = i - fractionStart;
    if (i == start) return UNDEFINED;
    const unitStart = i;
    while (i < len && digitAt(p, i) < 0 && !byteIs(p, i, 0x2e)) i++;
    if (i == unitStart) return UNDEFINED;
    const unit = <u64>unitNs(p + <usize>unitStart, i - unitStart);
    if (unit == 0 || whole > limit / unit) return UNDEFINED;
    let part = whole * unit;
    if (fractionLength > 0) {
      // Parsed with its point, as `.123`.
      part += <u64>(parseDecimal(p + <usize>(fractionStart - 1), fractionLength + 1) * <f64>unit);
    }
    if (part > limit - total) return UNDEFINED;
    total += part;
  }
  return intValue(negative ? <i64>(<u64>0 - total) : <i64>total);
}
