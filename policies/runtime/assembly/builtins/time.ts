// time.date, time.clock, time.weekday, time.diff and time.add_date, on OPA's time operands: a
// number of nanoseconds, or an array [ns, zone] (a third element, time.format's layout, must be a
// string; time-format.ts reads it). Times in UTC (no zone, "UTC" or "") are computed here. The module
// carries no time zone database, so for any other zone (an IANA name, "Local") it asks the host
// for the zone's UTC offset at the instant (gen_zone_offset); a zone the host does not know makes
// the call undefined, as OPA's `time.LoadLocation` error does.

import { gen_zone_offset } from "../gen";
import {
  Value, UNDEFINED, isArray, isNumber, isString, arrayLength, arrayGet, stringLength, stringEqualsBytes, intValue, newArray, arrayAppend, numberIsI64, numberToI64,
} from "../value";
import {
  NS_PER_SECOND, SECONDS_PER_DAY, civilDay, civilFromDays, civilMonth, civilYear, daysFromCivil,
  daysInMonth, fitsI64, floorDiv, floorMod, unixNano,
} from "./calendar";
import { output } from "./text-buffer";
import { DAY_NAMES } from "./go-time-layout";

/** No answer: what `offsetAt` gives for a zone the host does not know, `dateStep` for a bad operand. */
// @ts-ignore: decorator
@inline const NONE: i64 = i64.MIN_VALUE;

const UTC_NAME = memory.data<u8>([0x55, 0x54, 0x43]);

/** The time `readTime` read last: nanoseconds since the epoch, and its zone (UNDEFINED for UTC). */
export let timeNs: i64 = 0;
export let timeZone: Value = UNDEFINED;

/** Reads a time operand into timeNs and timeZone; false if it is not one, as OPA's `tzTime` refuses. */
function readTime(x: Value): bool {
  let ns = x;
  timeZone = UNDEFINED;
  if (isArray(x)) {
    const len = arrayLength(x);
    if (len == 0) return false;
    ns = arrayGet(x, 0);
    if (len > 1) {
      const zone = arrayGet(x, 1);
      if (!isString(zone)) return false;
      if (stringLength(zone) != 0 && !stringEqualsBytes(zone, UTC_NAME, 3)) timeZone = zone;
    }
    if (len > 2 && !isString(arrayGet(x, 2))) return false;
  }
  if (!isNumber(ns) || !numberIsI64(ns)) return false;
  timeNs = numberToI64(ns);
  return true;
}

/**
 * The UTC offset in seconds of `zone` (UNDEFINED for UTC) at a Unix time in seconds, or NONE. The
 * host answers `[offset, abbreviation]`; the abbreviation (a string, or null where the host's
 * system has no zone database) is kept in zoneName for time.format's `MST`.
 */
function offsetAt(zone: Value, unixSeconds: i64): i64 {
  zoneName = UNDEFINED;
  if (zone == UNDEFINED) return 0;
  const answer = gen_zone_offset(intValue(unixSeconds), zone);
  if (!isArray(answer) || arrayLength(answer) != 2) return NONE;
  const offset = arrayGet(answer, 0);
  if (!isNumber(offset) || !numberIsI64(offset)) return NONE;
  const name = arrayGet(answer, 1);
  if (isString(name)) zoneName = name;
  return numberToI64(offset);
}

/** The wall clock `readWallClock` read last: days since 1970-01-01, the second of that day, and the zone's UTC offset in seconds. */
export let localDay: i64 = 0;
export let secondOfDay: i32 = 0;
export let localOffset: i64 = 0;
/** Its abbreviation, from the host, for a named zone: a string, or UNDEFINED (UTC, or none known). */
export let zoneName: Value = UNDEFINED;

/** Reads the wall clock of `ns` in `zone` into localDay and secondOfDay; false for an unknown zone. */
function readWallClock(ns: i64, zone: Value): bool {
  const unixSeconds = floorDiv(ns, NS_PER_SECOND);
  const offset = offsetAt(zone, unixSeconds);
  if (offset == NONE) return false;
  localOffset = offset;
  const local = unixSeconds + offset;
  localDay = floorDiv(local, SECONDS_PER_DAY);
  secondOfDay = <i32>floorMod(local, SECONDS_PER_DAY);
  return true;
}

/** The wall clock of a time operand, in its own zone; false if it is not a time or its zone is unknown. */
export function readOperand(x: Value): bool {
  return readTime(x) && readWallClock(timeNs, timeZone);
}

function triple(a: i64, b: i64, c: i64): Value {
  const result = newArray(3);
  arrayAppend(result, intValue(a));
  arrayAppend(result, intValue(b));
  arrayAppend(result, intValue(c));
  return result;
}

/** `time.date(x)`: `[year, month, day]`. */
export function bi_time_date(x: Value): Value {
  if (!readOperand(x)) return UNDEFINED;
  civilFromDays(localDay);
  return triple(civilYear, civilMonth, civilDay);
}

/** `time.clock(x)`: `[hour, minute, second]`. */
export function bi_time_clock(x: Value): Value {
  if (!readOperand(x)) return UNDEFINED;
  return triple(secondOfDay / 3600, secondOfDay % 3600 / 60, secondOfDay % 60);
}

/** The day of the week (0 for Sunday) of a day counted from 1970-01-01, a Thursday. */
export function weekdayOf(day: i64): i32 {
  return <i32>floorMod(day + 4, 7);
}

/** `time.weekday(x)`: the day's English name, as Go's `Weekday.String` writes it. */
export function bi_time_weekday(x: Value): Value {
  if (!readOperand(x)) return UNDEFINED;
  output.begin();
  output.ascii(DAY_NAMES[weekdayOf(localDay)]);
  return output.toStringCopy();
}

/**
 * `time.diff(x, y)`: `[years, months, days, hours, minutes, seconds]` from the earlier to the later
 * time, both read in the first one's zone (the second's zone must still be valid), each field
 * borrowing from the next larger one as OPA's implementation (from icza/gox) does.
 */
export function bi_time_diff(x: Value, y: Value): Value {
  if (!readTime(y) || (timeZone != UNDEFINED && offsetAt(timeZone, floorDiv(timeNs, NS_PER_SECOND)) == NONE)) {
    return UNDEFINED;
  }
  const yNs = timeNs;
  if (!readTime(x)) return UNDEFINED;
  const zone = timeZone;
  if (!readWallClock(min(timeNs, yNs), zone)) return UNDEFINED;
  civilFromDays(localDay);
  const year1 = civilYear;
  const month1 = civilMonth;
  const day1 = civilDay;
  const second1 = secondOfDay;
  if (!readWallClock(max(timeNs, yNs), zone)) return UNDEFINED;
  civilFromDays(localDay);
  let years = civilYear - year1;
  let months = civilMonth - month1;
  let days = civilDay - day1;
  let hours = secondOfDay / 3600 - second1 / 3600;
  let minutes = secondOfDay % 3600 / 60 - second1 % 3600 / 60;
  let seconds = secondOfDay % 60 - second1 % 60;
  if (seconds < 0) {
    seconds += 60;
    minutes--;
  }
  if (minutes < 0) {
    minutes += 60;
    hours--;
  }
  if (hours < 0) {
    hours += 24;
    days--;
  }
  if (days < 0) {
    days += daysInMonth(month1, year1);
    months--;
  }
  if (months < 0) {
    months += 12;
    years--;
  }
  const result = newArray(6);
  arrayAppend(result, intValue(years));
  arrayAppend(result, intValue(months));
  arrayAppend(result, intValue(days));
  arrayAppend(result, intValue(hours));
  arrayAppend(result, intValue(minutes));
  arrayAppend(result, intValue(seconds));
  return result;
}

/** Years, months or days beyond this many move any time far out of the i64 range, cancelling or not. */
// @ts-ignore: decorator
@inline const MAX_DATE_STEP: i64 = 1 << 40;

/** An integer operand of time.add_date, or NONE when it is not one or is out of bounds. */
function dateStep(v: Value): i64 {
  if (!isNumber(v) || !numberIsI64(v)) return NONE;
  const n = numberToI64(v);
  return n >= -MAX_DATE_STEP && n <= MAX_DATE_STEP ? n : NONE;
}

/**
 * `time.add_date(x, years, months, days)`: Go's `AddDate` in the time's zone: the date's fields
 * are added to, out-of-range days and months carry over (2019-01-31 plus a month is 2019-03-03),
 * and the wall clock is kept; undefined beyond the i64 nanosecond range.
 */
export function bi_time_add_date(x: Value, years: Value, months: Value, days: Value): Value {
  const addYears = dateStep(years);
  const addMonths = dateStep(months);
  const addDays = dateStep(days);
  if (addYears == NONE || addMonths == NONE || addDays == NONE || !readOperand(x)) return UNDEFINED;
  civilFromDays(localDay);
  const monthIndex = <i64>(civilMonth - 1) + addMonths;
  const year = civilYear + addYears + floorDiv(monthIndex, 12);
  const day = daysFromCivil(year, <i32>floorMod(monthIndex, 12) + 1, 1) + <i64>(civilDay - 1) + addDays;
  // Far enough out that the seconds below cannot overflow, and still beyond the i64 nanoseconds.
  if (day < -200_000 || day > 200_000) return UNDEFINED;
  let unixSeconds = day * SECONDS_PER_DAY + secondOfDay;
  if (timeZone != UNDEFINED) {
    // As Go's `Date` does: the offset at the wall clock read as UTC, unless the instant that
    // offset gives falls under another one.
    const guess = offsetAt(timeZone, unixSeconds);
    const offset = guess == NONE ? NONE : offsetAt(timeZone, unixSeconds - guess);
    if (offset == NONE) return UNDEFINED;
    unixSeconds -= offset;
  }
  const ns = unixNano(floorDiv(unixSeconds, SECONDS_PER_DAY), floorMod(unixSeconds, SECONDS_PER_DAY) * NS_PER_SECOND + floorMod(timeNs, NS_PER_SECOND));
  return fitsI64 ? intValue(ns) : UNDEFINED;
}
