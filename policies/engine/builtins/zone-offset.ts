import { readFileSync } from 'node:fs';
import { join } from 'node:path';
/**
 * The UTC offset and abbreviation of a named time zone at an instant, which Gatehouse's modules
 * ask the host for (the policy runtime answers numbers, `UTC` and `""` itself): the offset from
 * the IANA database as `Intl` has it, the abbreviation from the system's (below).
 */

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

/**
 * The UTC offset in seconds of `zone` (an IANA name, `UTC` or `Local`, the process's zone) at a
 * Unix time in whole seconds; undefined for an unknown zone. Offsets change only at whole seconds,
 * so the module sends seconds, which a JavaScript number holds exactly.
 */
export function zoneOffsetSeconds(unixSeconds: number, zone: string): number | undefined {
  if (zone === 'UTC' || zone === '') return 0;
  let parts: Intl.DateTimeFormatPart[];
  try {
    parts = formatterFor(zone).formatToParts(unixSeconds * 1000);
  } catch {
    return undefined;
  }
  const field = (type: Intl.DateTimeFormatPartTypes): number => Number(parts.find((p) => p.type === type)?.value);
  const year = parts.find((p) => p.type === 'era')?.value === 'BC' ? 1 - field('year') : field('year');
  const wallClock = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not read years 0–99 as 1900–1999.
  wallClock.setUTCFullYear(year, field('month') - 1, field('day'));
  wallClock.setUTCHours(field('hour'), field('minute'), field('second'), 0);
  return (wallClock.getTime() - unixSeconds * 1000) / 1000;
}

/**
 * What a module's time builtins ask the host about a named zone at a Unix time in seconds: its
 * UTC offset, and its abbreviation (null where the system has no database for it; `time.format`
 * needs it for `MST`). Undefined for a zone `Intl` does not know.
 */
export function zoneAt(unixSeconds: number, zone: string): [offset: number, abbreviation: string | null] | undefined {
  const offset = zoneOffsetSeconds(unixSeconds, zone);
  return offset === undefined ? undefined : [offset, zoneAbbreviation(unixSeconds, zone, offset) ?? null];
}

/**
 * A zone's abbreviations as the system's time zone database (TZif files, RFC 8536) has them: what
 * Go's `time.LoadLocation` reads on Linux, and so what OPA's `time.format` writes for `MST`.
 * `Intl` names zones its own way (`GMT+1` for Europe/Paris, where the database says `CET`), so
 * offsets come from `Intl` and names from here.
 */
interface ZoneNames {
  /** Transition instants in Unix seconds, ascending, and the abbreviation in force from each. */
  transitions: number[];
  names: string[];
  /** Before the first transition: the first time type's abbreviation. */
  initial: string;
  /** After the last: the footer's rule, its standard and daylight names and standard offset (seconds east). */
  rule: { standard: string; daylight: string | null; standardOffset: number } | null;
}

/** Where Go looks first on Linux; `ZONEINFO` (a directory) overrides it, as it does Go's. */
const ZONEINFO_DIRS = ['/usr/share/zoneinfo', '/usr/share/lib/zoneinfo', '/usr/lib/locale/TZ'];
const zoneNames = new Map<string, ZoneNames | null>();

/**
 * The abbreviation of `zone` (an IANA name, `UTC`, `""` or `Local`) at a Unix time in seconds,
 * `offset` being its UTC offset then; undefined where the system has no database for it.
 */
export function zoneAbbreviation(unixSeconds: number, zone: string, offset: number): string | undefined {
  if (zone === 'UTC' || zone === '') return 'UTC';
  let names = zoneNames.get(zone);
  if (names === undefined) {
    names = readZoneNames(zone);
    zoneNames.set(zone, names);
  }
  if (!names) return undefined;
  const { transitions } = names;
  if (transitions.length === 0 || unixSeconds < transitions[0]!) return names.rule && transitions.length === 0 ? ruleName(names.rule, offset) : names.initial;
  if (unixSeconds >= transitions.at(-1)! && names.rule) return ruleName(names.rule, offset);
  let low = 0;
  let high = transitions.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (transitions[mid]! <= unixSeconds) low = mid + 1;
    else high = mid;
  }
  return names.names[low - 1];
}

/** Past the file's last transition the footer's rule applies: standard time where the offset is its. */
function ruleName(rule: NonNullable<ZoneNames['rule']>, offset: number): string {
  return offset === rule.standardOffset || rule.daylight === null ? rule.standard : rule.daylight;
}

function readZoneNames(zone: string): ZoneNames | null {
  // Go refuses these names too ("invalid location name"); they would escape the directory.
  if (zone.startsWith('/') || zone.split('/').includes('..')) return null;
  const local = zone === 'Local';
  const tz = process.env.TZ;
  if (local && tz === '') return { transitions: [], names: [], initial: 'UTC', rule: null };
  const name = local ? (tz === undefined ? null : tz.replace(/^:/, '')) : zone;
  const files = name === null ? ['/etc/localtime'] : [process.env.ZONEINFO, ...ZONEINFO_DIRS].filter((dir) => dir).map((dir) => join(dir!, name));
  for (const file of files) {
    try {
      return parseTzif(readFileSync(file));
    } catch {
      // Not there, or not a TZif file: the next place, as Go tries them.
    }
  }
  return null;
}

/** The abbreviations of a TZif file (version 1 data, or the 64-bit block of version 2 and later). */
function parseTzif(file: Buffer): ZoneNames {
  if (file.toString('latin1', 0, 4) !== 'TZif') throw new Error('not a TZif file');
  const counts = (at: number) => Array.from({ length: 6 }, (_, i) => file.readUInt32BE(at + 20 + 4 * i)) as [number, number, number, number, number, number];
  let [isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt] = counts(0);
  let at = 44;
  let timeBytes = 4;
  if (file[4] !== 0) {
    // Skip the 32-bit block to the 64-bit one.
    at += timecnt * 5 + typecnt * 6 + charcnt + leapcnt * 8 + isstdcnt + isutcnt;
    [isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt] = counts(at);
    at += 44;
    timeBytes = 8;
  }
  const transitions = Array.from({ length: timecnt }, (_, i) => (timeBytes === 8 ? Number(file.readBigInt64BE(at + 8 * i)) : file.readInt32BE(at + 4 * i)));
  const typeOf = Array.from({ length: timecnt }, (_, i) => file[at + timecnt * timeBytes + i]!);
  const typesAt = at + timecnt * (timeBytes + 1);
  const charsAt = typesAt + typecnt * 6;
  const abbreviation = (type: number) => {
    const start = charsAt + file[typesAt + type * 6 + 5]!;
    const end = file.indexOf(0, start);
    return file.toString('latin1', start, end < 0 ? charsAt + charcnt : end);
  };
  const footerAt = charsAt + charcnt + leapcnt * (timeBytes + 4) + isstdcnt + isutcnt;
  const footer = timeBytes === 8 ? file.toString('latin1', footerAt + 1, file.indexOf(0x0a, footerAt + 1)) : '';
  return { transitions, names: typeOf.map(abbreviation), initial: abbreviation(0), rule: parsePosixRule(footer) };
}

/** `EST5EDT,M3.2.0,M11.1.0` or `<+04>-4`: the standard name and offset, and the daylight name. */
function parsePosixRule(rule: string): ZoneNames['rule'] {
  const match = /^(<[^>]*>|[A-Za-z]+)([+-]?\d{1,2}(?::\d{1,2}){0,2})(<[^>]*>|[A-Za-z]+)?/.exec(rule);
  if (!match) return null;
  const unquote = (name: string) => name.replace(/^<(.*)>$/, '$1');
  const [hours, minutes = '0', seconds = '0'] = match[2]!.replace(/^[+-]/, '').split(':');
  const west = (Number(hours) * 3600 + Number(minutes) * 60 + Number(seconds)) * (match[2]!.startsWith('-') ? -1 : 1);
  // POSIX offsets count west of Greenwich; Go's (and the module's) east.
  return { standard: unquote(match[1]!), daylight: match[3] ? unquote(match[3]) : null, standardOffset: -west };
}
