/**
 * What a sidecar adds over calling its upstream directly, from the two targets' series measured
 * in the same run: the difference of their percentiles at each fixed rate (open loop, so both
 * count from when each request was due), and the headline figures at the lowest rate, where
 * neither side queues.
 */
import type { Series } from '../scenario.ts';

const round = (ms: number) => Math.round(ms * 1000) / 1000;

/** `series`' run of `target` at `rate` (null: the maximum-throughput run). */
export function findSeries(series: Series[], target: string, rate: number | null): Series | undefined {
  return series.find((s) => s.target === target && s.rate === rate && s.mode === (rate === null ? 'max' : 'rate'));
}

/** `a ÷ b` to three decimals; a zero `b` counts as 1. */
export function throughputRatio(a: number, b: number): number {
  return Math.round((a / Math.max(b, 1)) * 1000) / 1000;
}

/**
 * `<prefix>added.rate<N>.p50Ms` and `…p99Ms` for every rate both targets ran, and
 * `<prefix>addedP50Ms`, `<prefix>addedP99Ms` at the lowest; `note` says which rate that was.
 */
export function addedLatency(series: Series[], sidecar: string, direct: string, rates: number[], prefix = ''): { metrics: Record<string, number>; note: string | null } {
  const metrics: Record<string, number> = {};
  for (const rate of rates) {
    const via = findSeries(series, sidecar, rate);
    const base = findSeries(series, direct, rate);
    if (!via || !base) continue;
    metrics[`${prefix}added.rate${rate}.p50Ms`] = round(via.latencyMs.p50 - base.latencyMs.p50);
    metrics[`${prefix}added.rate${rate}.p99Ms`] = round(via.latencyMs.p99 - base.latencyMs.p99);
  }
  const lowest = Math.min(...rates);
  if (!(`${prefix}added.rate${lowest}.p50Ms` in metrics)) return { metrics, note: null };
  metrics[`${prefix}addedP50Ms`] = metrics[`${prefix}added.rate${lowest}.p50Ms`]!;
  metrics[`${prefix}addedP99Ms`] = metrics[`${prefix}added.rate${lowest}.p99Ms`]!;
  return { metrics, note: `${prefix}addedP50Ms and ${prefix}addedP99Ms are at the lowest fixed rate, ${lowest} req/s.` };
}
