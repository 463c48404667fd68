/**
 * One HTTP target of a scenario (Gatehouse or a baseline) and how every HTTP scenario measures
 * it: closed loop for the maximum, then open loop at each fixed rate, a series a run.
 */
import path from 'node:path';
import type { ScenarioOptions, Series } from '../scenario.ts';
import { startCpuProfile } from './cpu-profile.ts';
import { runLoad, type LoadSpec } from './load.ts';
import { describeLoad, seriesFromLoad } from './load-series.ts';

export interface LoadTarget {
  /** The series' target name: `gatehouse`, `raw-uws`, `direct-upstream`, … */
  name: string;
  baseline: boolean;
  url: string;
  /**
   * The URL of each load run when it must differ from one run to the next (the agents scenario
   * opens a fresh agent run for each, so no run's call limit ends another's); `url` without it.
   */
  urlForLoad?(): Promise<string>;
  headers: Record<string, string>;
  /**
   * The process serving the target (`process.pid` for a server in the harness's process), whose
   * CPU per request every load run then reports; none where no one process serves it.
   */
  cpuPid?: number;
  /**
   * With `--profile`, the label its CPU profile is kept under. Gatehouse's targets are profiled
   * as `sidecar` unless they say otherwise; a baseline only when it names one (the governed
   * floor does: its profile is the other half of Gatehouse's).
   */
  profileAs?: string;
  stop(): Promise<void>;
}

/** What every request sends beside the target's URL and headers. */
export type LoadRequest = Pick<LoadSpec, 'method' | 'body'>;

/** Where measurements go: the scenario's series, and with `--profile` the sidecar's CPU profile. */
export interface Measurements {
  series: Series[];
  profiles: Record<string, string>;
}

/**
 * Measures `target` at maximum throughput and at each of `options.rates`, then stops it, also
 * when a run fails. With `options.profile`, the runs of a target with a profile label (see
 * `LoadTarget.profileAs`) are sampled into `profiles[label]`, saved as
 * `<profilePrefix>.<label>.cpuprofile` in the scenario's work directory.
 */
export async function measureTarget(target: LoadTarget, request: LoadRequest, options: ScenarioOptions, into: Measurements, profilePrefix: string): Promise<void> {
  try {
    const label = target.profileAs ?? (target.baseline ? null : 'sidecar');
    const recording = options.profile && label ? await startCpuProfile() : null;
    for (const rate of [0, ...options.rates]) {
      const url = target.urlForLoad ? await target.urlForLoad() : target.url;
      const load = await runLoad({
        url,
        headers: target.headers,
        ...request,
        rate,
        durationS: options.durationS,
        warmupS: options.warmupS,
        connections: options.connections,
        serverPid: target.cpuPid,
      });
      options.progress(describeLoad(target.name, rate, load));
      into.series.push(seriesFromLoad(target.name, target.baseline, rate, load));
    }
    if (recording && label) into.profiles[label] = await recording.stop(path.join(options.workDir, `${profilePrefix}.${label}.cpuprofile`));
  } finally {
    await target.stop();
  }
}
