/**
 * One load run split evenly between several servers answering the same API (instances of one
 * cluster): one `runLoad` per server, all at once, each with its share of the rate and the
 * connections and its own server's process for CPU time, added up into one result as if one
 * generator had measured them all. The generators start together, each after its own warm-up,
 * so their measured phases overlap to within their start-up times.
 */
import { mergeHistograms, encodeHistogram, summarise } from './histogram.ts';
import { runLoad, type LoadResult, type LoadSpec } from './load.ts';

/** One server of the split: where its share goes and which process serves it. */
export interface SplitTarget {
  url: string;
  pid: number;
}

/** `total` split into `parts` near-equal shares, the first ones larger by one. */
function share(total: number, parts: number, index: number): number {
  return Math.floor(total / parts) + (index < total % parts ? 1 : 0);
}

/**
 * Runs `spec` against every target at once, rate and connections shared out (at least one
 * connection each). The result's `serverCpuUsPerRequest` is the targets' CPU time together over
 * their measured phases per request answered by any of them; its `scheduleLagMs` is left out.
 */
export async function runSplitLoad(targets: SplitTarget[], spec: Omit<LoadSpec, 'url' | 'serverPid'>): Promise<LoadResult> {
  const n = targets.length;
  const results = await Promise.all(
    targets.map((target, i) =>
      runLoad({ ...spec, url: target.url, serverPid: target.pid, rate: spec.rate / n, connections: Math.max(1, share(spec.connections, n, i)) }),
    ),
  );
  if (n === 1) return results[0]!;
  const requests = results.reduce((sum, r) => sum + r.requests, 0);
  const statuses: Record<string, number> = {};
  for (const r of results) for (const [status, count] of Object.entries(r.statuses)) statuses[status] = (statuses[status] ?? 0) + count;
  const histogram = mergeHistograms(results.map((r) => r.histogram));
  const busy = results.flatMap((r) => (r.machineBusy === undefined ? [] : [r.machineBusy]));
  const cpu = results.map((r) => (r.serverCpuUsPerRequest === undefined ? null : r.serverCpuUsPerRequest * r.requests));
  return {
    requests,
    errors: results.reduce((sum, r) => sum + r.errors, 0),
    ...(spec.rate > 0 ? { unsent: results.reduce((sum, r) => sum + (r.unsent ?? 0), 0) } : {}),
    statuses,
    throughput: results.reduce((sum, r) => sum + r.throughput, 0),
    latencyMs: summarise(histogram),
    histogram: encodeHistogram(histogram),
    // Every generator read the same machine over nearly the same phase: their mean.
    ...(busy.length > 0 ? { machineBusy: Math.round((busy.reduce((a, b) => a + b, 0) / busy.length) * 1000) / 1000 } : {}),
    ...(requests > 0 && cpu.every((c) => c !== null) ? { serverCpuUsPerRequest: Math.round((cpu.reduce((a, b) => a! + b!, 0)! / requests) * 10) / 10 } : {}),
  };
}
