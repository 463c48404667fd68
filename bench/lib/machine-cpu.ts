/**
 * CPU time from the kernel's counters. The whole machine's (`/proc/stat`): how busy it was over a
 * stretch of time, every process counted, the generator's and the server's alike; a run whose
 * server saturates one core while the machine stays partly idle could go further with more
 * threads, one that leaves nothing idle could not. And one process's (`/proc/<pid>/stat`): the
 * CPU a server spent, every thread, which divided by the requests it answered is the figure
 * that varies least with how busy a shared machine is.
 */
import { spawnSync } from 'node:child_process';
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

let ticksPerSecond: number | undefined;

/** USER_HZ, the unit of /proc's CPU times: 100 on every Linux this runs on, but asked rather than assumed. */
function clockTicksPerSecond(): number {
  ticksPerSecond ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout) || 100;
  return ticksPerSecond;
}

/**
 * The CPU time process `pid` has used so far, user and system, every thread, in seconds (to the
 * clock tick, 10 ms); null where `/proc/<pid>/stat` cannot be read.
 */
export function readProcessCpuS(pid: number): number | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // `pid (comm) state ppid …`: the command may hold spaces and parentheses, so fields are counted
  // from the last `)`; utime and stime are fields 14 and 15 of the line.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? ticks / clockTicksPerSecond() : null;
}
