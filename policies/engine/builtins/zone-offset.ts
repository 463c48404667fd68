/**
 * The UTC offset of a named time zone at an instant, which Gatehouse's modules ask the host for
 * (the policy runtime answers numbers, `UTC` and `""` itself): the IANA database as `Intl` has it.
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
