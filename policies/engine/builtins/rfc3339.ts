/**
 * OPA's `time.parse_rfc3339_ns`: Go's `time.Parse(time.RFC3339, s)` then `UnixNano`.
 *
 * Accepted: `YYYY-MM-DDTHH:MM:SS`, an optional fraction of a second (`.` or `,` and any number of
 * digits, nanoseconds kept), then `Z` or `±HH:MM`. Dates are checked against the calendar
 * (no February 30), as Go does. Times outside the int64-nanosecond range (years 1678–2262) are
 * refused, as OPA refuses them.
 */

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(?:(Z)|([+-])(\d{2}):(\d{2}))$/;

const MIN_NS = -(2n ** 63n);
const MAX_NS = 2n ** 63n - 1n;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysIn(month: number, year: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!;
}

/**
 * Nanoseconds since the Unix epoch, exactly, or undefined when `s` is not an RFC 3339 time Go
 * accepts.
 */
export function parseRfc3339Ns(s: string): bigint | undefined {
  const m = RFC3339.exec(s);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(month, year)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetSeconds = 0;
  if (!m[8]) {
    const offsetHours = Number(m[10]);
    const offsetMinutes = Number(m[11]);
    if (offsetHours > 23 || offsetMinutes > 59) return undefined;
    offsetSeconds = (offsetHours * 60 + offsetMinutes) * 60 * (m[9] === '-' ? -1 : 1);
  }
  const nanos = BigInt((m[7] ?? '').slice(0, 9).padEnd(9, '0'));
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, 0);
  const ns = (BigInt(date.getTime()) / 1000n - BigInt(offsetSeconds)) * 1_000_000_000n + nanos;
  return ns < MIN_NS || ns > MAX_NS ? undefined : ns;
}
