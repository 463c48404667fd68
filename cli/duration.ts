/**
 * Durations on the command line: a number with a unit (`250ms`, `5s`, `5m`, `2h`, `7d`), or a
 * bare number read in `bareUnit`. Webhook retry schedules are lists of them: `5s,5m,30m,2h`.
 */
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseDuration(name: string, text: string, bareUnit: 'ms' | 's' = 's'): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!match) throw new Error(`${name} must be a duration like 250ms, 5s, 5m, 2h or 7d, got '${text}'`);
  return Math.round(Number(match[1]) * UNIT_MS[match[2] ?? bareUnit]!);
}

export function parseDurationList(name: string, text: string): number[] {
  const list = text.split(',').filter((part) => part.trim() !== '');
  if (list.length === 0) throw new Error(`${name} must list at least one duration, e.g. 5s,5m,30m`);
  return list.map((part) => parseDuration(name, part));
}
