/**
 * What a result was measured on and from: the machine and the commit. Numbers without these
 * cannot be compared with anything.
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';

export interface Machine {
  cores: number;
  cpuModel: string;
  totalMemoryGiB: number;
  node: string;
  platform: string;
  /** 1-minute load average when the run started: above `cores`, expect a longer tail. */
  loadAverage1m: number;
}

export interface Commit {
  /** `git rev-parse --short HEAD`, or null outside a git checkout. */
  commit: string | null;
  /** Uncommitted changes in the working tree: the numbers are of code no commit holds. */
  dirty: boolean | null;
}

export function describeMachine(): Machine {
  const cpus = os.cpus();
  return {
    cores: cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    totalMemoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    loadAverage1m: Math.round(os.loadavg()[0]! * 100) / 100,
  };
}

export function describeCommit(cwd: string): Commit {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return { commit: git('rev-parse', '--short', 'HEAD'), dirty: git('status', '--porcelain') !== '' };
  } catch {
    return { commit: null, dirty: null };
  }
}
