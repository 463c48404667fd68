// The proleptic Gregorian calendar over days since the Unix epoch, as Go's `time` package counts
// it, for the time builtins. Days are converted with the era arithmetic of Howard Hinnant's
// `days_from_civil`/`civil_from_days` (400-year eras of 146097 days), exact for any i64 day
// count the builtins produce.

// @ts-ignore: decorator
@inline export const NS_PER_SECOND: i64 = 1_000_000_000;
// @ts-ignore: decorator
@inline export const SECONDS_PER_DAY: i64 = 86_400;

/** a / b rounded toward negative infinity (b > 0). */
export function floorDiv(a: i64, b: i64): i64 {
  const q = a / b;
  return a % b < 0 ? q - 1 : q;
}

/** a mod b in [0, b) (b > 0). */
export function floorMod(a: i64, b: i64): i64 {
  const r = a % b;
  return r < 0 ? r + b : r;
}

export function isLeapYear(year: i64): bool {
  return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
}

/** Days in a month (1–12) of a year. */
export function daysInMonth(month: i32, year: i64): i32 {
  if (month == 2) return isLeapYear(year) ? 29 : 28;
  return month == 4 || month == 6 || month == 9 || month == 11 ? 30 : 31;
}

/** Days since 1970-01-01 of a date whose month is 1–12 (the day may be any number). */
export function daysFromCivil(year: i64, month: i32, day: i64): i64 {
  const y = month <= 2 ? year - 1 : year;
  const era = floorDiv(y, 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = <i64>((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear;
  return era * 146097 + dayOfEra - 719468;
}

/** The date `civilFromDays` found last. */
export let civilYear: i64 = 0;
export let civilMonth: i32 = 0;
export let civilDay: i32 = 0;

/** Sets civilYear, civilMonth (1–12) and civilDay to the date `days` days after 1970-01-01. */
export function civilFromDays(days: i64): void {
  const z = days + 719468;
  const era = floorDiv(z, 146097);
  const dayOfEra = z - era * 146097;
  const yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146096) / 365;
  const dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100);
  const mp = <i32>((5 * dayOfYear + 2) / 153);
  civilDay = <i32>(dayOfYear - (153 * <i64>mp + 2) / 5 + 1);
  civilMonth = mp < 10 ? mp + 3 : mp - 9;
  civilYear = yearOfEra + era * 400 + (civilMonth <= 2 ? 1 : 0);
}

/** Whether the last `unixNano` result fits an i64; Go's `UnixNano` cannot hold it otherwise. */
export let fitsI64: bool = true;

/** Nanoseconds since the epoch of `days` days after it plus `ns` (0 ≤ ns < one day); see `fitsI64`. */
export function unixNano(days: i64, ns: i64): i64 {
  const nsPerDay = SECONDS_PER_DAY * NS_PER_SECOND;
  // i64 nanoseconds span 106751 days each side of the epoch, and a part of the next.
  fitsI64 = days >= -106752 && days <= 106751;
  if (!fitsI64) return 0;
  if (days == -106752) {
    const base = (days + 1) * nsPerDay;
    fitsI64 = ns - nsPerDay >= i64.MIN_VALUE - base;
    return fitsI64 ? base + (ns - nsPerDay) : 0;
  }
  const base = days * nsPerDay;
  fitsI64 = base < 0 || ns <= i64.MAX_VALUE - base;
  return fitsI64 ? base + ns : 0;
}
