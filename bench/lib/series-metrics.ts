/**
 * The metrics every series yields without its scenario naming them, so bench/targets.json can
 * refer to any measured figure: `<target>.<run>.<figure>` where `<run>` is `max`, `rate<N>` or
 * `micro`, and `<figure>` one of `throughput`, `p50Ms`, `p90Ms`, `p99Ms`, `p999Ms`, `maxMs`,
 * `errors`, and `cpuUsPerRequest` where the series has it. E.g. `gatehouse.rate5000.p99Ms`,
 * `raw-uws.max.throughput`, `governed-floor.rate1000.cpuUsPerRequest`.
 */
import type { Series } from '../scenario.ts';

/** `max`, `rate5000` or `micro`: how a series' run is named in metrics, charts and tables. */
export function runName(series: Pick<Series, 'mode' | 'rate'>): string {
  return series.mode === 'rate' ? `rate${series.rate}` : series.mode;
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export function seriesMetrics(series: Series[]): Record<string, number> {
  const metrics: Record<string, number> = {};
  for (const s of series) {
    const prefix = `${s.target}.${runName(s)}`;
    metrics[`${prefix}.throughput`] = s.throughput;
    metrics[`${prefix}.p50Ms`] = s.latencyMs.p50;
    metrics[`${prefix}.p90Ms`] = s.latencyMs.p90;
    metrics[`${prefix}.p99Ms`] = s.latencyMs.p99;
    metrics[`${prefix}.p999Ms`] = s.latencyMs.p999;
    metrics[`${prefix}.maxMs`] = s.latencyMs.max;
    metrics[`${prefix}.errors`] = s.errors;
    if (s.cpuUsPerRequest !== undefined) metrics[`${prefix}.cpuUsPerRequest`] = s.cpuUsPerRequest;
  }
  return metrics;
}
