/**
 * OPA's `time.parse_duration_ns`, `time.add_date`, `time.date`, `time.clock` and `time.diff`,
 * computed as Go's `time` package computes them, on nanosecond timestamps held as bigints, for
 * modules built by `opa build` (Gatehouse's own run them inside the module); and the UTC offset of
 * a named zone that Gatehouse's modules ask for. Calendar fields in a time zone other than UTC
 * come from the IANA database through `Intl`.
 */

const NS_PER_MS = 1_000_000n;
const MIN_NS = -(2n ** 63n);
const MAX_NS = 2n ** 63n - 1n;

const UNIT_NS: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  'µs': 1_000n, // U+00B5 micro sign
  'μs': 1_000n, // U+03BC Greek mu
  ms: NS_PER_MS,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

/** One `<digits>[.<digits>]<unit>` of a duration; Go accepts `1.`, `.5` and even `.` as a number. */
const DURATION_PART = /^(\d*)(\.(\d*))?([^\d.]+)/;

/** Go's `time.ParseDuration`, in nanoseconds; undefined where Go returns an error. */
export function parseDurationNs(text: string): bigint | undefined {
  let s = text;
  const negative = s.startsWith('-');
  if (negative || s.startsWith('+')) s = s.slice(1);
  if (s === '0') return 0n;
  if (s === '') return undefined;
  let total = 0n;
  while (s !== '') {
    const m = DURATION_PART.exec(s);
    if (!m || (m[1] === '' && m[2] === undefined)) return undefined;
    const unit = UNIT_NS[m[4]!];
    if (unit === undefined) return undefined;
    let part = BigInt(m[1] || '0') * unit;
    const fraction = m[3] ?? '';
    // Go scales the fraction in floating point and truncates, so this does the same.
    if (fraction !== '') part += BigInt(Math.trunc(Number(`0.${fraction}`) * Number(unit)));
    total += part;
    if (total > MAX_NS + (negative ? 1n : 0n)) return undefined;
    s = s.slice(m[0].length);
  }
  return negative ? -total : total;
}

/** A time OPA's time builtins take: nanoseconds, or `[nanoseconds, zone]`. */
export interface ZonedTime {
  ns: bigint;
  /** An IANA zone name, `UTC` or `Local` (the process's zone); `""` is UTC, as in Go. */
  zone: string;
}

/** The operand as a time, or undefined if it is not an integer number of nanoseconds (with a zone). */
export function zonedTime(v: unknown): ZonedTime | undefined {
  let ns = v;
  let zone: unknown = 'UTC';
  if (Array.isArray(v)) {
    if (v.length !== 2) return undefined;
    [ns, zone] = v;
  }
  if (typeof ns !== 'number' || !Number.isInteger(ns) || typeof zone !== 'string') return undefined;
  const n = BigInt(ns);
  return n < MIN_NS || n > MAX_NS ? undefined : { ns: n, zone: zone === '' ? 'UTC' : zone };
}

export interface CalendarFields {
  year: number;
  /** 1–12 */
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone === 'Local' ? undefined : zone,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** The milliseconds since the epoch a nanosecond time falls in (Go floors negative times too). */
function floorMs(ns: bigint): number {
  const ms = ns / NS_PER_MS;
  return Number(ns < 0n && ms * NS_PER_MS !== ns ? ms - 1n : ms);
}

/** The calendar date and wall clock of a time in its zone; undefined for an unknown zone. */
export function calendarFields(t: ZonedTime): CalendarFields | undefined {
  const ms = floorMs(t.ns);
  if (t.zone === 'UTC') {
    const d = new Date(ms);
    return {
      year: d.getUTCFullYear(),
      month: d.getUTCMonth() + 1,
      day: d.getUTCDate(),
      hour: d.getUTCHours(),
      minute: d.getUTCMinutes(),
      second: d.getUTCSeconds(),
    };
  }
  let parts: Intl.DateTimeFormatPart[];
  try {
    parts = formatterFor(t.zone).formatToParts(ms);
  } catch {
    return undefined;
  }
  const field = (type: Intl.DateTimeFormatPartTypes): number => Number(parts.find((p) => p.type === type)?.value);
  const era = parts.find((p) => p.type === 'era')?.value;
  const year = era === 'BC' ? 1 - field('year') : field('year');
  return { year, month: field('month'), day: field('day'), hour: field('hour'), minute: field('minute'), second: field('second') };
}

/** Milliseconds since the epoch of a UTC calendar time, fields out of range carried over as Go's `time.Date` does. */
function utcMs(year: number, month: number, day: number, hour: number, minute: number, second: number, ms: number): number {
  const d = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not read years 0–99 as 1900–1999.
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, ms);
  return d.getTime();
}

/**
 * The UTC offset in seconds of `zone` (an IANA name, `UTC` or `Local`) at a Unix time in whole
 * seconds; undefined for an unknown zone. Offsets change only at whole seconds, so the module
 * sends seconds, which a JavaScript number holds exactly.
 */
export function zoneOffsetSeconds(unixSeconds: number, zone: string): number | undefined {
  const f = calendarFields({ ns: BigInt(unixSeconds) * 1_000_000_000n, zone });
  return f && (utcMs(f.year, f.month, f.day, f.hour, f.minute, f.second, 0) - unixSeconds * 1000) / 1000;
}

/** Go's `time.Unix(0, ns).UTC().AddDate(years, months, days).UnixNano()`; undefined beyond int64. */
export function addDate(ns: bigint, years: number, months: number, days: number): bigint | undefined {
  const f = calendarFields({ ns, zone: 'UTC' })!;
  const msOfSecond = floorMs(ns) - Math.floor(floorMs(ns) / 1000) * 1000;
  const ms = utcMs(f.year + years, f.month + months, f.day + days, f.hour, f.minute, f.second, msOfSecond);
  if (!Number.isFinite(ms)) return undefined;
  const result = BigInt(ms) * NS_PER_MS + (ns - BigInt(floorMs(ns)) * NS_PER_MS);
  return result < MIN_NS || result > MAX_NS ? undefined : result;
}

/**
 * `time.diff(t1, t2)`: `[years, months, days, hours, minutes, seconds]` from the earlier to the
 * later time, both read in the first one's zone, each field borrowing from the next larger one as
 * OPA's implementation (icza/gox) does.
 */
export function timeDiff(a: ZonedTime, b: ZonedTime): number[] | undefined {
  const [early, late] = a.ns <= b.ns ? [a.ns, b.ns] : [b.ns, a.ns];
  const f1 = calendarFields({ ns: early, zone: a.zone });
  const f2 = calendarFields({ ns: late, zone: a.zone });
  if (!f1 || !f2) return undefined;
  let year = f2.year - f1.year;
  let month = f2.month - f1.month;
  let day = f2.day - f1.day;
  let hour = f2.hour - f1.hour;
  let minute = f2.minute - f1.minute;
  let second = f2.second - f1.second;
  if (second < 0) {
    second += 60;
    minute--;
  }
  if (minute < 0) {
    minute += 60;
    hour--;
  }
  if (hour < 0) {
    hour += 24;
    day--;
  }
  if (day < 0) {
    day += new Date(utcMs(f1.year, f1.month + 1, 0, 0, 0, 0, 0)).getUTCDate();
    month--;
  }
  if (month < 0) {
    month += 12;
    year--;
  }
  return [year, month, day, hour, minute, second];
}
