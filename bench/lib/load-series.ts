/**
 * Turning what the load generator measured into a scenario's `Series`, the same way for every
 * HTTP scenario.
 */
import type { Series } from '../scenario.ts';
import type { LoadResult } from './load.ts';

/**
 * A series from one load run. Responses outside 2xx count as errors beside the failed requests:
 * a fast 401 or 500 is not a fast decision.
 */
export function seriesFromLoad(target: string, baseline: boolean, rate: number, load: LoadResult): Series {
  const rejected = Object.entries(load.statuses).reduce((n, [status, count]) => (status.startsWith('2') ? n : n + count), 0);
  return {
    target,
    baseline,
    mode: rate > 0 ? 'rate' : 'max',
    rate: rate > 0 ? rate : null,
    throughput: load.throughput,
    latencyMs: load.latencyMs,
    operations: load.requests,
    errors: load.errors + rejected,
    histogram: load.histogram,
    ...(load.machineBusy === undefined ? {} : { machineBusy: load.machineBusy }),
    ...(load.serverCpuUsPerRequest === undefined ? {} : { cpuUsPerRequest: load.serverCpuUsPerRequest }),
  };
}

/** One line of progress for a finished load run. */
export function describeLoad(target: string, rate: number, load: LoadResult): string {
  const run = rate > 0 ? `${rate}/s` : 'max';
  const lag = load.scheduleLagMs ? `, send lag p50 ${load.scheduleLagMs.p50} ms` : '';
  const unsent = load.unsent ? ` (${load.unsent} not sent: the server fell behind the rate)` : '';
  const busy = load.machineBusy === undefined ? '' : `, machine ${Math.round(load.machineBusy * 100)}% busy`;
  const cpu = load.serverCpuUsPerRequest === undefined ? '' : `, server CPU ${load.serverCpuUsPerRequest} µs/request`;
  return `${target} ${run}: ${load.throughput} req/s, p50 ${load.latencyMs.p50} ms, p99 ${load.latencyMs.p99} ms, ${load.errors} errors${unsent}${lag}${busy}${cpu}`;
}
