/**
 * How busy the whole machine was over a stretch of time, from the kernel's CPU counters
 * (`/proc/stat`): every process counts, the generator's and the server's alike. A run whose
 * server saturates one core while the machine stays partly idle could go further with more
 * threads; one that leaves nothing idle could not.
 */
import { readFileSync } from 'node:fs';

export interface CpuCounters {
  idle: number;
  total: number;
}

/** The machine's aggregate CPU counters now, or null where `/proc/stat` is not available. */
export function readCpuCounters(): CpuCounters | null {
  let text: string;
  try {
    text = readFileSync('/proc/stat', 'utf8');
  } catch {
    return null;
  }
  // `cpu  user nice system idle iowait irq softirq steal …`, in clock ticks, all cores together.
  const fields = text.slice(0, text.indexOf('\n')).trim().split(/\s+/).slice(1).map(Number);
  if (fields.length < 5 || fields.some((n) => !Number.isFinite(n))) return null;
  return { idle: fields[3]! + fields[4]!, total: fields.reduce((sum, n) => sum + n, 0) };
}

/** The share of all cores' time spent busy between two readings (0–1), or null without both. */
export function busyShare(before: CpuCounters | null, after: CpuCounters | null): number | null {
  if (!before || !after || after.total <= before.total) return null;
  return 1 - (after.idle - before.idle) / (after.total - before.total);
}
