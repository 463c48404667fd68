/**
 * `--check`: the measured metrics against bench/targets.json. A target names a scenario, one of
 * its metrics, and a ceiling (`max`) or floor (`min`); the format is in docs/bench.md.
 */
import { readFileSync } from 'node:fs';

export interface Target {
  scenario: string;
  metric: string;
  /** The metric must be at most this (latency ceilings, error counts). */
  max?: number;
  /** The metric must be at least this (ratio and throughput floors). */
  min?: number;
  /** What the target means to a reader, e.g. "decision creation p99 ≤ 2 ms at 5,000 req/s". */
  description: string;
}

export interface TargetOutcome {
  target: Target;
  /** `not run`: the scenario was not part of this run and was not asked for. */
  status: 'pass' | 'miss' | 'not run';
  value: number | null;
  /** Why a miss missed, in words. */
  detail: string;
}

/** What the check needs to know of each scenario that ran. */
export interface ScenarioOutcome {
  metrics: Record<string, number>;
  /** Set when the scenario threw: none of its targets can pass. */
  error: string | null;
}

/** Reads and validates a targets file; a malformed one is an error naming the entry. */
export function loadTargets(file: string): Target[] {
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as { targets?: unknown };
  if (!Array.isArray(parsed.targets)) throw new Error(`${file}: expected {"targets": [...]}`);
  return parsed.targets.map((t: Partial<Target>, i) => {
    const where = `${file}: targets[${i}]`;
    if (typeof t.scenario !== 'string' || typeof t.metric !== 'string') throw new Error(`${where} needs "scenario" and "metric"`);
    if (typeof t.max !== 'number' && typeof t.min !== 'number') throw new Error(`${where} (${t.metric}) needs "max" or "min"`);
    return { ...t, description: t.description ?? `${t.scenario} ${t.metric}` } as Target;
  });
}

export function bound(target: Target): string {
  return [target.min !== undefined ? `≥ ${target.min}` : '', target.max !== undefined ? `≤ ${target.max}` : ''].filter(Boolean).join(' and ');
}

/**
 * Checks every target. A scenario that did not run is `not run`, unless it was selected by name
 * (then its absence is a miss: the run was asked for it).
 */
export function checkTargets(targets: Target[], ran: Map<string, ScenarioOutcome>, selected: ReadonlySet<string>): TargetOutcome[] {
  return targets.map((target): TargetOutcome => {
    const outcome = ran.get(target.scenario);
    if (!outcome) {
      return selected.has(target.scenario)
        ? { target, status: 'miss', value: null, detail: 'scenario was selected but did not run' }
        : { target, status: 'not run', value: null, detail: 'scenario not run' };
    }
    if (outcome.error) return { target, status: 'miss', value: null, detail: `scenario failed: ${outcome.error}` };
    const value = outcome.metrics[target.metric];
    if (value === undefined || !Number.isFinite(value)) return { target, status: 'miss', value: null, detail: 'metric not reported' };
    const low = target.min !== undefined && value < target.min;
    const high = target.max !== undefined && value > target.max;
    return low || high
      ? { target, status: 'miss', value, detail: `${value} is not ${bound(target)}` }
      : { target, status: 'pass', value, detail: '' };
  });
}
