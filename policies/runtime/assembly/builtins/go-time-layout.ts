// Go's time layouts, which time.format and time.parse_ns take: the reference time
// "Mon Jan 2 15:04:05 MST 2006" written the way a time should look. A layout is read as Go's
// `nextStdChunk` reads it: literal text up to the next element, the element, and so on. OPA also
// takes the names of Go's layout constants it lists (`acceptedTimeFormats` in topdown/time.go).

import { scratch } from "./text-buffer";

/** The elements of a layout. */
export const enum Std {
  None, LongMonth, Month, NumMonth, ZeroMonth, LongWeekDay, WeekDay, Day, UnderDay, ZeroDay,
  UnderYearDay, ZeroYearDay, Hour, Hour12, ZeroHour12, Minute, ZeroMinute, Second, ZeroSecond,
  LongYear, Year, PM, LowerPM, ZoneName, Zone, FracSecond0, FracSecond9,
}

/** Day names from Sunday, as Go writes them; the short ones are their first three letters. */
export const DAY_NAMES: StaticArray<string> = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

/** Month names from January; the short ones are their first three letters. */
export const MONTH_NAMES: StaticArray<string> = [
  "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December",
];

/**
 * A time broken into the fields a layout names, in its zone: what time.format writes and what
 * time.parse_ns reads (which marks a month, day or day of the year not given with -1).
 */
// @ts-ignore: decorator
@unmanaged
export class TimeFields {
  year: i64;
  month: i64;
  day: i64;
  yearDay: i64;
  weekday: i64;
  hour: i64;
  minute: i64;
  second: i64;
  nanos: i64;
}

/** The one TimeFields, in static memory. */
export const fields = changetype<TimeFields>(memory.data(<i32>offsetof<TimeFields>(), 8));

/** The element `nextElement` found last: its kind and where it starts and ends in the layout. */
export let element: Std = Std.None;
export let elementStart: i32 = 0;
export let elementEnd: i32 = 0;
/** A zone offset element: `Z…` (Z for UTC), `…:…` between fields, and how many fields (hours, minutes, seconds). */
export let zoneIso: bool = false;
export let zoneColon: bool = false;
export let zoneFields: i32 = 0;
/** A fractional second element: how many digits, and its separator (`.` or `,`). */
export let fractionDigits: i32 = 0;
export let fractionSeparator: i32 = 0;

/** Whether the `len` bytes at p hold `s` (ASCII) at i. */
export function bytesAt(p: usize, len: i32, i: i32, s: string): bool {
  const n = s.length;
  if (i + n > len) return false;
  for (let k = 0; k < n; k++) {
    if (<i32>load<u8>(p + <usize>(i + k)) != s.charCodeAt(k)) return false;
  }
  return true;
}

/** Byte i of the `len` bytes at p, or -1 past their end. */
export function byteAt(p: usize, len: i32, i: i32): i32 {
  return i < len ? <i32>load<u8>(p + <usize>i) : -1;
}

function found(kind: Std, start: i32, end: i32): bool {
  element = kind;
  elementStart = start;
  elementEnd = end;
  return true;
}

function zone(colon: bool, fields: i32, start: i32, end: i32): bool {
  zoneColon = colon;
  zoneFields = fields;
  return found(Std.Zone, start, end);
}

/** `-07…` or `Z07…` at i: Go tries -070000, -07:00:00, -0700, -07:00 and -07, in that order. */
function zoneAt(p: usize, len: i32, i: i32): bool {
  if (!bytesAt(p, len, i + 1, "07")) return false;
  zoneIso = byteAt(p, len, i) == 0x5a;
  const j = i + 3;
  if (bytesAt(p, len, j, "0000")) return zone(false, 3, i, j + 4);
  if (bytesAt(p, len, j, ":00:00")) return zone(true, 3, i, j + 6);
  if (bytesAt(p, len, j, "00")) return zone(false, 2, i, j + 2);
  if (bytesAt(p, len, j, ":00")) return zone(true, 2, i, j + 3);
  return zone(false, 1, i, j);
}

/** `.000`/`.999` (or with `,`) at i: a run of one digit not followed by another digit. */
function fractionAt(p: usize, len: i32, i: i32): bool {
  const digit = byteAt(p, len, i + 1);
  if (digit != 0x30 && digit != 0x39) return false;
  let j = i + 1;
  while (byteAt(p, len, j) == digit) j++;
  const next = byteAt(p, len, j);
  if (next >= 0x30 && next <= 0x39) return false;
  fractionDigits = j - i - 1;
  fractionSeparator = byteAt(p, len, i);
  return found(digit == 0x30 ? Std.FracSecond0 : Std.FracSecond9, i, j);
}

function isLower(p: usize, len: i32, i: i32): bool {
  const c = byteAt(p, len, i);
  return c >= 0x61 && c <= 0x7a;
}

/** `01` to `06`. */
const ZERO_ELEMENTS: StaticArray<Std> = [Std.ZeroMonth, Std.ZeroDay, Std.ZeroHour12, Std.ZeroMinute, Std.ZeroSecond, Std.Year];

/** The element starting at i, if one does; Go's tests for each leading byte. */
function elementAt(p: usize, len: i32, i: i32): bool {
  switch (byteAt(p, len, i)) {
    case 0x4a: // J
      if (bytesAt(p, len, i, "January")) return found(Std.LongMonth, i, i + 7);
      return bytesAt(p, len, i, "Jan") && !isLower(p, len, i + 3) && found(Std.Month, i, i + 3);
    case 0x4d: // M
      if (bytesAt(p, len, i, "Monday")) return found(Std.LongWeekDay, i, i + 6);
      if (bytesAt(p, len, i, "Mon") && !isLower(p, len, i + 3)) return found(Std.WeekDay, i, i + 3);
      return bytesAt(p, len, i, "MST") && found(Std.ZoneName, i, i + 3);
    case 0x30: { // 0
      const d = byteAt(p, len, i + 1) - 0x30;
      if (d >= 1 && d <= 6) return found(ZERO_ELEMENTS[d - 1], i, i + 2);
      return bytesAt(p, len, i + 1, "02") && found(Std.ZeroYearDay, i, i + 3);
    }
    case 0x31: // 1
      return byteAt(p, len, i + 1) == 0x35 ? found(Std.Hour, i, i + 2) : found(Std.NumMonth, i, i + 1);
    case 0x32: // 2
      return bytesAt(p, len, i, "2006") ? found(Std.LongYear, i, i + 4) : found(Std.Day, i, i + 1);
    case 0x5f: // _: `_2006` is a literal _ and the year.
      if (bytesAt(p, len, i + 1, "2006")) return found(Std.LongYear, i + 1, i + 5);
      if (byteAt(p, len, i + 1) == 0x32) return found(Std.UnderDay, i, i + 2);
      return bytesAt(p, len, i + 1, "_2") && found(Std.UnderYearDay, i, i + 3);
    case 0x33: return found(Std.Hour12, i, i + 1);
    case 0x34: return found(Std.Minute, i, i + 1);
    case 0x35: return found(Std.Second, i, i + 1);
    case 0x50: return byteAt(p, len, i + 1) == 0x4d && found(Std.PM, i, i + 2);
    case 0x70: return byteAt(p, len, i + 1) == 0x6d && found(Std.LowerPM, i, i + 2);
    case 0x2d: case 0x5a: return zoneAt(p, len, i);
    case 0x2e: case 0x2c: return fractionAt(p, len, i);
  }
  return false;
}

/** Finds the next element of the layout at p from `from`; Std.None (starting at len) if there is none. */
export function nextElement(p: usize, len: i32, from: i32): void {
  for (let i = from; i < len; i++) {
    if (elementAt(p, len, i)) return;
  }
  found(Std.None, len, len);
}

/** The layout `layoutFor` chose. */
export let layoutData: usize = 0;
export let layoutLength: i32 = 0;

/** Go's layout constants OPA accepts by name, each followed by its layout. */
const NAMED_LAYOUTS: StaticArray<string> = [
  "ANSIC", "Mon Jan _2 15:04:05 2006",
  "UnixDate", "Mon Jan _2 15:04:05 MST 2006",
  "RubyDate", "Mon Jan 02 15:04:05 -0700 2006",
  "RFC822", "02 Jan 06 15:04 MST",
  "RFC822Z", "02 Jan 06 15:04 -0700",
  "RFC850", "Monday, 02-Jan-06 15:04:05 MST",
  "RFC1123", "Mon, 02 Jan 2006 15:04:05 MST",
  "RFC1123Z", "Mon, 02 Jan 2006 15:04:05 -0700",
  "RFC3339", "2006-01-02T15:04:05Z07:00",
  "RFC3339Nano", "2006-01-02T15:04:05.999999999Z07:00",
];

function useNamed(k: i32): void {
  scratch.begin();
  scratch.ascii(NAMED_LAYOUTS[k + 1]);
  layoutData = scratch.data;
  layoutLength = scratch.len;
}

/** Sets layoutData and layoutLength to the layout the `len` bytes at p name, or to those bytes themselves. */
export function layoutFor(p: usize, len: i32): void {
  layoutData = p;
  layoutLength = len;
  for (let k = 0; k < NAMED_LAYOUTS.length; k += 2) {
    if (NAMED_LAYOUTS[k].length == len && bytesAt(p, len, 0, NAMED_LAYOUTS[k])) useNamed(k);
  }
}

/** Sets layoutData and layoutLength to the layout of one of the names above. */
export function layoutNamed(name: string): void {
  for (let k = 0; k < NAMED_LAYOUTS.length; k += 2) {
    if (NAMED_LAYOUTS[k] == name) useNamed(k);
  }
}
