// time.format: a time operand (time.ts) written by a Go layout (go-time-layout.ts) in the operand's
// zone, as Go's `Time.Format` writes it. Go writes a zone's abbreviation for `MST`: UTC's is
// known here, a named zone's comes from the host with its offset (from the system's zone database,
// where Go reads it too); where the host has none, `MST` is undefined rather than a made-up name.

import { Value, UNDEFINED, isArray, arrayLength, arrayGet, stringData, stringLength } from "../value";
import { NS_PER_SECOND, civilDay, civilFromDays, civilMonth, civilYear, daysFromCivil, floorMod } from "./calendar";
import {
  DAY_NAMES, MONTH_NAMES, Std, fields, element, elementEnd, elementStart, fractionDigits, fractionSeparator,
  layoutData, layoutFor, layoutLength, layoutNamed, nextElement, zoneColon, zoneFields, zoneIso,
} from "./go-time-layout";
import { output } from "./text-buffer";
import { localDay, localOffset, readOperand, secondOfDay, timeNs, timeZone, weekdayOf, zoneName } from "./time";

/** A day or month name, or (short) its first three letters. */
function name(s: string, short: bool): void {
  const n = short ? 3 : s.length;
  for (let k = 0; k < n; k++) output.byte(s.charCodeAt(k));
}

/** A zone offset element: `Z` for UTC in the ISO forms, else a sign and the fields, as Go writes them. */
function zoneOffset(offset: i64): void {
  if (offset == 0 && zoneIso) {
    output.byte(0x5a);
    return;
  }
  // Go works from whole minutes truncated toward zero, and takes the seconds from the offset.
  let minutes = offset / 60;
  let seconds = offset;
  if (minutes < 0) {
    minutes = -minutes;
    seconds = -seconds;
  }
  output.byte(offset / 60 < 0 ? 0x2d : 0x2b);
  output.decimal(minutes / 60, 2);
  if (zoneColon) output.byte(0x3a);
  if (zoneFields > 1) output.decimal(minutes % 60, 2);
  if (zoneFields > 2) {
    if (zoneColon) output.byte(0x3a);
    output.decimal(seconds % 60, 2);
  }
}

/** A fractional second: `.000` keeps every digit asked for, `.999` drops trailing zeros (and a bare separator). */
function fraction(nanos: i64, trim: bool): void {
  if (trim && nanos == 0) return;
  const start = output.len;
  output.byte(fractionSeparator);
  output.decimal(nanos, 9);
  if (fractionDigits < 9) output.truncate(output.len - 9 + fractionDigits);
  if (!trim) return;
  while (output.len > start && load<u8>(output.data + <usize>(output.len - 1)) == 0x30) output.truncate(output.len - 1);
  if (output.len == start + 1) output.truncate(start);
}

/** Noon and midnight are 12 on a 12-hour clock. */
function hour12(): i64 {
  return fields.hour % 12 == 0 ? 12 : fields.hour % 12;
}

/** Writes one element of the layout; false for `MST` in a zone whose abbreviation the host does not know. */
function writeElement(kind: Std): bool {
  switch (kind) {
    case Std.Year: output.decimal((fields.year < 0 ? -fields.year : fields.year) % 100, 2); break;
    case Std.LongYear: output.decimal(fields.year, 4); break;
    case Std.Month: case Std.LongMonth: name(MONTH_NAMES[<i32>fields.month - 1], kind == Std.Month); break;
    case Std.NumMonth: case Std.ZeroMonth: output.decimal(fields.month, kind == Std.ZeroMonth ? 2 : 0); break;
    case Std.WeekDay: case Std.LongWeekDay: name(DAY_NAMES[<i32>fields.weekday], kind == Std.WeekDay); break;
    case Std.UnderDay: output.repeat(0x20, fields.day < 10 ? 1 : 0); output.decimal(fields.day); break;
    case Std.Day: case Std.ZeroDay: output.decimal(fields.day, kind == Std.ZeroDay ? 2 : 0); break;
    case Std.UnderYearDay: output.repeat(0x20, fields.yearDay < 10 ? 2 : fields.yearDay < 100 ? 1 : 0); output.decimal(fields.yearDay); break;
    case Std.ZeroYearDay: output.decimal(fields.yearDay, 3); break;
    case Std.Hour: output.decimal(fields.hour, 2); break;
    case Std.Hour12: case Std.ZeroHour12: output.decimal(hour12(), kind == Std.ZeroHour12 ? 2 : 0); break;
    case Std.Minute: case Std.ZeroMinute: output.decimal(fields.minute, kind == Std.ZeroMinute ? 2 : 0); break;
    case Std.Second: case Std.ZeroSecond: output.decimal(fields.second, kind == Std.ZeroSecond ? 2 : 0); break;
    case Std.PM: output.ascii(fields.hour >= 12 ? "PM" : "AM"); break;
    case Std.LowerPM: output.ascii(fields.hour >= 12 ? "pm" : "am"); break;
    case Std.ZoneName:
      if (timeZone == UNDEFINED) output.ascii("UTC");
      else if (zoneName != UNDEFINED) output.bytes(stringData(zoneName), stringLength(zoneName));
      else return false;
      break;
    case Std.Zone: zoneOffset(localOffset); break;
    default: fraction(fields.nanos, kind == Std.FracSecond9);
  }
  return true;
}

/** Reads the fields of the wall clock `readOperand` read. */
function readFields(): void {
  civilFromDays(localDay);
  fields.year = civilYear;
  fields.month = civilMonth;
  fields.day = civilDay;
  fields.yearDay = localDay - daysFromCivil(civilYear, 1, 1) + 1;
  fields.weekday = weekdayOf(localDay);
  fields.hour = secondOfDay / 3600;
  fields.minute = secondOfDay % 3600 / 60;
  fields.second = secondOfDay % 60;
  fields.nanos = floorMod(timeNs, NS_PER_SECOND);
}

/**
 * `time.format(x)`: x is nanoseconds, `[ns, zone]` or `[ns, zone, layout]`; the layout is a Go
 * layout or the name of one of Go's layout constants OPA accepts, RFC3339Nano when absent or "".
 */
export function bi_time_format(x: Value): Value {
  if (!readOperand(x)) return UNDEFINED;
  const layout = isArray(x) && arrayLength(x) > 2 ? arrayGet(x, 2) : UNDEFINED;
  if (layout == UNDEFINED || stringLength(layout) == 0) {
    layoutNamed("RFC3339Nano");
  } else {
    layoutFor(stringData(layout), stringLength(layout));
  }
  readFields();
  output.begin();
  for (let i = 0; ; i = elementEnd) {
    nextElement(layoutData, layoutLength, i);
    output.bytes(layoutData + <usize>i, elementStart - i);
    if (element == Std.None) break;
    if (!writeElement(element)) return UNDEFINED;
  }
  return output.toStringCopy();
}
