// time.parse_ns: Go's `time.Parse(layout, value)` (go-time-layout.ts reads the layout), in exact
// i64 nanoseconds. Go matches each element against the value as its `parse` does, leniencies
// included (one-digit fields, a fraction after seconds the layout does not ask for, names in any
// case), and checks the date only at the end. A zone abbreviation is read and then set aside, as
// Go does for one its local zone does not name: OPA runs in UTC, which names only "UTC".

import { Value, UNDEFINED, isString, stringData, stringLength, intValue } from "../value";
import { NS_PER_SECOND, SECONDS_PER_DAY, daysFromCivil, daysInMonth, fitsI64, floorDiv, floorMod, isLeapYear, unixNano } from "./calendar";
import {
  DAY_NAMES, MONTH_NAMES, Std, fields, byteAt, bytesAt, element, elementEnd, elementStart, fractionDigits,
  layoutData, layoutFor, layoutLength, nextElement, zoneColon, zoneFields, zoneIso,
} from "./go-time-layout";

/** The value being parsed, and how far parsing has read it. */
let text: usize = 0;
let textLength: i32 = 0;
let at: i32 = 0;
/** The number the last `digits2`, `digits3` or `signedNumber` read. */
let num: i64 = 0;

/** A 12-hour clock read AM or PM. */
let pm: bool = false;
let am: bool = false;
/** `Z` or `UTC` was read; else the numeric offset read last, -1 for none (Go's own marker). */
let utc: bool = false;
let zoneOffset: i64 = -1;

function textByte(i: i32): i32 {
  return byteAt(text, textLength, i);
}

function isDigitAt(i: i32): bool {
  const c = textByte(i);
  return c >= 0x30 && c <= 0x39;
}

function isSeparatorAt(i: i32): bool {
  const c = textByte(i);
  return c == 0x2e || c == 0x2c;
}

function digitAt(i: i32): i64 {
  return <i64>(textByte(i) - 0x30);
}

/** Go's `getnum`: one or two digits (exactly two if fixed) into num. */
function digits2(fixed: bool): bool {
  if (!isDigitAt(at)) return false;
  if (!isDigitAt(at + 1)) {
    if (fixed) return false;
    num = digitAt(at++);
    return true;
  }
  num = digitAt(at) * 10 + digitAt(at + 1);
  at += 2;
  return true;
}

/** Go's `getnum3`: one to three digits (exactly three if fixed) into num. */
function digits3(fixed: bool): bool {
  let n: i64 = 0;
  let i = 0;
  for (; i < 3 && isDigitAt(at + i); i++) n = n * 10 + digitAt(at + i);
  if (i == 0 || (fixed && i != 3)) return false;
  num = n;
  at += i;
  return true;
}

/** Go's `atoi` of text[from, to) (at most ten bytes here): a sign, then only digits, none being 0. */
function signedNumber(from: i32, to: i32): bool {
  const negative = from < to && textByte(from) == 0x2d;
  let i = negative || (from < to && textByte(from) == 0x2b) ? from + 1 : from;
  let n: i64 = 0;
  for (; i < to; i++) {
    if (!isDigitAt(i)) return false;
    n = n * 10 + digitAt(i);
  }
  num = negative ? -n : n;
  return true;
}

/** Go's `skip`: the layout's literal text in [from, to); a space matches any run of spaces, even none at the end. */
function skipLiteral(from: i32, to: i32): bool {
  let i = from;
  while (i < to) {
    const c = <i32>load<u8>(layoutData + <usize>i);
    if (c == 0x20) {
      if (at < textLength && textByte(at) != 0x20) return false;
      while (i < to && load<u8>(layoutData + <usize>i) == 0x20) i++;
      while (textByte(at) == 0x20) at++;
      continue;
    }
    if (textByte(at) != c) return false;
    i++;
    at++;
  }
  return true;
}

/** Whether the n letters at `at` spell the first n of s, ignoring ASCII case as Go's `match`. */
function spells(s: string, n: i32): bool {
  if (at + n > textLength) return false;
  for (let k = 0; k < n; k++) {
    const c = textByte(at + k) | 0x20;
    if (textByte(at + k) != s.charCodeAt(k) && (c != (s.charCodeAt(k) | 0x20) || c < 0x61 || c > 0x7a)) return false;
  }
  return true;
}

/** Go's `lookup`: the first name (or its first three letters) the text starts with; its index, or -1. */
function lookupName(names: StaticArray<string>, short: bool): i32 {
  for (let k = 0; k < names.length; k++) {
    const n = short ? 3 : names[k].length;
    if (spells(names[k], n)) {
      at += n;
      return k;
    }
  }
  return -1;
}

/** Go's `parseNanoseconds` of the nbytes at `at` (a separator and digits), the first nine digits kept. */
function fraction(nbytes: i32): bool {
  const used = min(nbytes, 10);
  if (!isSeparatorAt(at) || !signedNumber(at + 1, at + used) || num < 0) return false;
  fields.nanos = num;
  for (let k = used; k < 10; k++) fields.nanos *= 10;
  at += nbytes;
  return true;
}

/** Go's `parseSignedOffset` at i: a sign and an hour of at most 23; its length, or 0. */
function signedHoursLength(i: i32): i32 {
  const c = textByte(i);
  if (c != 0x2b && c != 0x2d) return 0;
  let j = i + 1;
  let hours = 0;
  for (; isDigitAt(j); j++) hours = min(hours * 10 + <i32>digitAt(j), 24);
  return j == i + 1 || hours > 23 ? 0 : j - i;
}

function isUpperAt(i: i32): bool {
  const c = textByte(i);
  return c >= 0x41 && c <= 0x5a;
}

/** Go's `parseTimeZone`: the length of the zone abbreviation at `at`, or 0. */
function zoneNameLength(): i32 {
  if (textLength - at < 3) return 0;
  if (bytesAt(text, textLength, at, "ChST") || bytesAt(text, textLength, at, "MeST")) return 4;
  if (bytesAt(text, textLength, at, "GMT")) return 3 + signedHoursLength(at + 3);
  if (textByte(at) == 0x2b || textByte(at) == 0x2d) return signedHoursLength(at);
  let upper = 0;
  while (upper < 6 && isUpperAt(at + upper)) upper++;
  if (upper == 3) return 3;
  if (upper == 4 && (textByte(at + 3) == 0x54 || bytesAt(text, textLength, at, "WITA"))) return 4;
  return upper == 5 && textByte(at + 4) == 0x54 ? 5 : 0;
}

/** `MST`: `UTC`, or any abbreviation Go takes for one, which leaves the time as read. */
function zoneName(): bool {
  if (bytesAt(text, textLength, at, "UTC")) {
    utc = true;
    at += 3;
    return true;
  }
  const n = zoneNameLength();
  at += n;
  return n > 0;
}

/** Two digits at i, or -1. */
function twoDigitsAt(i: i32): i64 {
  return isDigitAt(i) && isDigitAt(i + 1) ? digitAt(i) * 10 + digitAt(i + 1) : -1;
}

/** A numeric zone offset element (`Z` too for the ISO forms); Go allows 24 hours, 60 minutes and 60 seconds. */
function zoneOffsetField(): bool {
  if (zoneIso && textByte(at) == 0x5a) {
    at++;
    utc = true;
    return true;
  }
  const step = zoneColon ? 3 : 2;
  const width = 1 + 2 + step * (zoneFields - 1);
  if (textLength - at < width) return false;
  if (zoneColon && (textByte(at + 3) != 0x3a || (zoneFields == 3 && textByte(at + 6) != 0x3a))) return false;
  const hours = twoDigitsAt(at + 1);
  const minutes = zoneFields > 1 ? twoDigitsAt(at + 1 + step) : 0;
  const seconds = zoneFields > 2 ? twoDigitsAt(at + 1 + 2 * step) : 0;
  if (hours < 0 || minutes < 0 || seconds < 0 || hours > 24 || minutes > 60 || seconds > 60) return false;
  const sign = textByte(at);
  if (sign != 0x2b && sign != 0x2d) return false;
  zoneOffset = ((hours * 60 + minutes) * 60 + seconds) * (sign == 0x2d ? -1 : 1);
  at += width;
  return true;
}

/** The number just read if reading succeeded and it is at most `limit` (its field's range), else -1. */
function field(read: bool, limit: i64): i64 {
  return read && num <= limit ? num : -1;
}

/**
 * Seconds, and a fraction the layout does not ask for: Go reads one when the value has a
 * separator and a digit and the layout's next element is not a fraction itself.
 */
function seconds(fixed: bool, next: i32): bool {
  fields.second = field(digits2(fixed), 59);
  if (fields.second < 0) return false;
  if (!isSeparatorAt(at) || !isDigitAt(at + 1)) return true;
  nextElement(layoutData, layoutLength, next);
  if (element == Std.FracSecond0 || element == Std.FracSecond9) return true;
  let n = 2;
  while (isDigitAt(at + n)) n++;
  return fraction(n);
}

/** `.999`: an optional fraction of any length. */
function optionalFraction(): bool {
  if (!isSeparatorAt(at) || !isDigitAt(at + 1)) return true;
  let n = 1;
  while (isDigitAt(at + n)) n++;
  return fraction(n);
}

/** `PM` or `pm` (upper or lower case as the layout has it): AM or PM. */
function meridiem(upper: bool): bool {
  const isPm = bytesAt(text, textLength, at, upper ? "PM" : "pm");
  const isAm = bytesAt(text, textLength, at, upper ? "AM" : "am");
  pm = pm || isPm;
  am = am || isAm;
  at += 2;
  return isPm || isAm;
}

/** Reads one element of the layout; `next` is where the layout goes on after it. */
function readElement(kind: Std, next: i32): bool {
  switch (kind) {
    case Std.Year:
      if (textLength - at < 2 || !signedNumber(at, at + 2)) return false;
      at += 2;
      fields.year = num >= 69 ? num + 1900 : num + 2000;
      return true;
    case Std.LongYear:
      if (textLength - at < 4 || !isDigitAt(at) || !signedNumber(at, at + 4)) return false;
      at += 4;
      fields.year = num;
      return true;
    case Std.Month: case Std.LongMonth:
      fields.month = lookupName(MONTH_NAMES, kind == Std.Month) + 1;
      return fields.month > 0;
    case Std.NumMonth: case Std.ZeroMonth:
      fields.month = field(digits2(kind == Std.ZeroMonth), 12);
      return fields.month > 0;
    case Std.WeekDay: case Std.LongWeekDay:
      return lookupName(DAY_NAMES, kind == Std.WeekDay) >= 0;
    case Std.Day: case Std.UnderDay: case Std.ZeroDay:
      if (kind == Std.UnderDay && textByte(at) == 0x20) at++;
      fields.day = field(digits2(kind == Std.ZeroDay), 99);
      return fields.day >= 0;
    case Std.UnderYearDay: case Std.ZeroYearDay:
      for (let k = 0; k < 2 && kind == Std.UnderYearDay && textByte(at) == 0x20; k++) at++;
      fields.yearDay = field(digits3(kind == Std.ZeroYearDay), 999);
      return fields.yearDay >= 0;
    case Std.Hour:
      fields.hour = field(digits2(false), 23);
      return fields.hour >= 0;
    case Std.Hour12: case Std.ZeroHour12:
      fields.hour = field(digits2(kind == Std.ZeroHour12), 12);
      return fields.hour >= 0;
    case Std.Minute: case Std.ZeroMinute:
      fields.minute = field(digits2(kind == Std.ZeroMinute), 59);
      return fields.minute >= 0;
    case Std.Second: case Std.ZeroSecond:
      return seconds(kind == Std.ZeroSecond, next);
    case Std.PM: case Std.LowerPM:
      return textLength - at >= 2 && meridiem(kind == Std.PM);
    case Std.ZoneName:
      return zoneName();
    case Std.Zone:
      return zoneOffsetField();
    case Std.FracSecond0:
      return textLength - at >= 1 + fractionDigits && fraction(1 + fractionDigits);
    default:
      return optionalFraction();
  }
}

/** Days before each month of a common year, and the year's length. */
const DAYS_BEFORE: StaticArray<i32> = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365];

/** Go's checks of the date once read: a day of the year agrees with any month and day given, and the day is in its month. */
function settleDate(): bool {
  if (fields.yearDay < 0) {
    if (fields.month < 0) fields.month = 1;
    if (fields.day < 0) fields.day = 1;
  } else {
    let m: i64 = 0;
    let d: i64 = 0;
    if (isLeapYear(fields.year) && fields.yearDay == 31 + 29) {
      m = 2;
      d = 29;
    } else if (isLeapYear(fields.year) && fields.yearDay > 31 + 29) {
      fields.yearDay--;
    }
    if (fields.yearDay < 1 || fields.yearDay > 365) return false;
    if (m == 0) {
      m = (fields.yearDay - 1) / 31 + 1;
      if (<i64>DAYS_BEFORE[<i32>m] < fields.yearDay) m++;
      d = fields.yearDay - <i64>DAYS_BEFORE[<i32>m - 1];
    }
    if ((fields.month >= 0 && fields.month != m) || (fields.day >= 0 && fields.day != d)) return false;
    fields.month = m;
    fields.day = d;
  }
  return fields.day >= 1 && fields.day <= daysInMonth(<i32>fields.month, fields.year);
}

function reset(value: Value): void {
  text = stringData(value);
  textLength = stringLength(value);
  at = 0;
  fields.year = 0;
  fields.month = -1;
  fields.day = -1;
  fields.yearDay = -1;
  fields.hour = 0;
  fields.minute = 0;
  fields.second = 0;
  fields.nanos = 0;
  pm = false;
  am = false;
  utc = false;
  zoneOffset = -1;
}

/** Reads the whole value by the layout; false where Go's `Parse` fails. */
function readAll(): bool {
  let i = 0;
  while (true) {
    nextElement(layoutData, layoutLength, i);
    const kind = element;
    const next = elementEnd;
    if (!skipLiteral(i, elementStart)) return false;
    if (kind == Std.None) break;
    if (!readElement(kind, next)) return false;
    i = next;
  }
  return at == textLength;
}

/**
 * `time.parse_ns(layout, value)`: the layout is a Go layout or the name of one of Go's layout
 * constants OPA accepts. Undefined where Go fails to parse, and for a time outside the i64
 * nanosecond range, as OPA refuses it.
 */
export function bi_time_parse_ns(layout: Value, value: Value): Value {
  if (!isString(layout) || !isString(value)) return UNDEFINED;
  layoutFor(stringData(layout), stringLength(layout));
  reset(value);
  if (!readAll()) return UNDEFINED;
  if (pm && fields.hour < 12) fields.hour += 12;
  else if (am && fields.hour == 12) fields.hour = 0;
  if (!settleDate()) return UNDEFINED;
  let unixSeconds = daysFromCivil(fields.year, <i32>fields.month, fields.day) * SECONDS_PER_DAY + fields.hour * 3600 + fields.minute * 60 + fields.second;
  if (!utc && zoneOffset != -1) unixSeconds -= zoneOffset;
  const ns = unixNano(floorDiv(unixSeconds, SECONDS_PER_DAY), floorMod(unixSeconds, SECONDS_PER_DAY) * NS_PER_SECOND + fields.nanos);
  return fitsI64 ? intValue(ns) : UNDEFINED;
}
