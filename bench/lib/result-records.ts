/**
 * The shape of the files under bench/results/: one `<scenario>.json` per scenario and a combined
 * `summary.json` (docs/bench.md describes both).
 */
import type { LatencySummary, Series } from '../scenario.ts';
import type { HotFunction } from './cpu-profile.ts';
import type { Commit, Machine } from './environment.ts';
import type { TargetOutcome } from './targets.ts';

/** What every file of one run shares: when, where, from what, and how. */
export interface RunContext {
  date: string;
  machine: Machine;
  git: Commit;
  options: { quick: boolean; durationS: number; warmupS: number; rates: number[]; connections: number; profile: boolean };
  /** The load generator's maximum against a raw uWS handler, measured at the start of the run. */
  generator: { ceiling: number; latencyMs: LatencySummary; connections: number; processes: number } | null;
}

/** `<scenario>.json`. */
export interface ScenarioRecord {
  scenario: string;
  description: string;
  run: RunContext;
  elapsedS: number;
  /** Set when the scenario threw; then `series` and `metrics` hold nothing. */
  error: string | null;
  /** The scenario's own metrics, plus `<target>.<run>.<figure>` for every series (bench/lib/series-metrics.ts). */
  metrics: Record<string, number>;
  series: Series[];
  notes: string[];
  /** CPU profile files (relative to the results directory) by process label. */
  profiles: Record<string, string>;
  /** The top functions by self time of each profile. */
  hotFunctions: Record<string, HotFunction[]>;
  /** Chart files (relative to the results directory). */
  charts: string[];
}

/** `summary.json`: the run, each scenario's headline metrics, and the target check. */
export interface SummaryRecord {
  run: RunContext;
  scenarios: Array<{
    scenario: string;
    description: string;
    file: string;
    elapsedS: number;
    error: string | null;
    /** The metrics the scenario named itself (ratios, headline figures), without the per-series ones. */
    metrics: Record<string, number>;
    charts: string[];
  }>;
  /** Null when the run was not asked to `--check`. */
  check: TargetOutcome[] | null;
}
