/**
 * The contract between the benchmark harness (`npm run bench`) and its scenarios. Each scenario
 * lives in `bench/scenarios/<name>.ts` and exports `scenario: Scenario`. A scenario measures
 * Gatehouse and its baselines in the same run and reports what it saw; the harness adds the
 * machine and commit, writes the results and charts, and checks them against bench/targets.json.
 */
export interface ScenarioOptions {
  /** Smoke run: tiny durations, only proves the scenario works. Never used to judge speed. */
  quick: boolean;
  /** Seconds per measured phase, after `warmupS` of unrecorded warm-up. */
  durationS: number;
  warmupS: number;
  /** Fixed rates (requests or events per second) for open-loop latency runs. */
  rates: number[];
  /** Concurrent connections for closed-loop (maximum throughput) runs. */
  connections: number;
  /** Record a CPU profile of the sidecar side; the path is returned in `ScenarioResult.profiles`. */
  profile: boolean;
  /** Where the scenario may write scratch files (profiles, temporary data directories). */
  workDir: string;
  /** One line of progress for a person watching a long run. */
  progress(message: string): void;
}

/** Latencies in milliseconds, from an HDR histogram. */
export interface LatencySummary {
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

/** One measured run of one target. */
export interface Series {
  /** What was measured, e.g. `gatehouse`, `raw-uws`, `node-http`, `direct-upstream`, `nginx`, `plain-js`. */
  target: string;
  /** A ceiling or peer measured for comparison rather than Gatehouse itself. */
  baseline: boolean;
  /** `max`: closed loop at full speed; `rate`: open loop at `rate`; `micro`: per-operation timing in-process. */
  mode: 'max' | 'rate' | 'micro';
  rate: number | null;
  /** Operations per second achieved. */
  throughput: number;
  latencyMs: LatencySummary;
  operations: number;
  errors: number;
  /** The HDR histogram, base64-encoded compressed (hdr-histogram-js `encodeIntoCompressedBase64`), values in µs. */
  histogram: string | null;
  /** The unit of `histogram`'s values when it is not µs: `ns` for in-process timings of a few µs. */
  histogramUnit?: 'us' | 'ns';
  /** Load runs: the share of the machine's CPU (all cores, every process) busy over the run, 0–1. */
  machineBusy?: number;
  /**
   * Load runs of a target that names its process: the server's CPU time (user and system, every
   * thread, from `/proc/<pid>/stat`) over the run, divided by the requests it answered, in µs.
   */
  cpuUsPerRequest?: number;
}

export interface ScenarioResult {
  scenario: string;
  description: string;
  series: Series[];
  /**
   * Named figures bench/targets.json can refer to, e.g. `gatehouse.rate5000.p99Ms`,
   * `maxThroughputRatio` (Gatehouse ÷ its ceiling), `evaluate.medianUs`.
   */
  metrics: Record<string, number>;
  /** Anything a reader needs to interpret the numbers (a skipped baseline and why, the generator's ceiling). */
  notes: string[];
  /** CPU profiles recorded with `profile`, by process label. */
  profiles: Record<string, string>;
}

export interface Scenario {
  name: string;
  description: string;
  run(options: ScenarioOptions): Promise<ScenarioResult>;
}
