/**
 * HDR histograms as the suite uses them: built one way, summarised one way, carried between
 * processes and into result files as compressed base64 (`Series.histogram`).
 */
import * as hdr from 'hdr-histogram-js';
import type { LatencySummary } from '../scenario.ts';

export type Histogram = hdr.Histogram;

/** The unit a histogram's integer values are in. HTTP latencies are recorded in µs, in-process micro timings in ns. */
export type HistogramUnit = 'us' | 'ns';

const UNITS_PER_MS: Record<HistogramUnit, number> = { us: 1_000, ns: 1_000_000 };

/** A histogram for values from 1 up to an hour in µs (or 3.6 s in ns), to 3 significant digits. */
export function createHistogram(): Histogram {
  // 64-bit counts: a long micro benchmark records millions of samples in the same bucket.
  return hdr.build({ bitBucketSize: 64, lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: 3 });
}

/** p50/p90/p99/p99.9/max in milliseconds. The one summary every series, table and check uses. */
export function summarise(histogram: Histogram, unit: HistogramUnit = 'us'): LatencySummary {
  const perMs = UNITS_PER_MS[unit];
  // Rounded to the histogram's own resolution in ns, so result files do not carry float noise.
  const ms = (value: number) => Math.round((value / perMs) * 1e6) / 1e6;
  return {
    p50: ms(histogram.getValueAtPercentile(50)),
    p90: ms(histogram.getValueAtPercentile(90)),
    p99: ms(histogram.getValueAtPercentile(99)),
    p999: ms(histogram.getValueAtPercentile(99.9)),
    max: ms(histogram.maxValue),
  };
}

export function encodeHistogram(histogram: Histogram): string {
  return hdr.encodeIntoCompressedBase64(histogram);
}

export function decodeHistogram(encoded: string): Histogram {
  return hdr.decodeFromCompressedBase64(encoded, 64);
}

/** Adds every encoded histogram into one (several generator processes measuring one run). */
export function mergeHistograms(encoded: string[]): Histogram {
  const total = createHistogram();
  for (const e of encoded) total.add(decodeHistogram(e));
  return total;
}

/** One point of a percentile spectrum: the value (in ms) below which `percentile` % of samples fall. */
export interface SpectrumPoint {
  percentile: number;
  valueMs: number;
}

/**
 * The percentile spectrum of an encoded histogram, at points spaced evenly on the
 * "nines" scale (0, 50, 75, 90, 95, 99, 99.5, …, 99.99), as HdrHistogram's own plots are.
 */
export function percentileSpectrum(encoded: string, unit: HistogramUnit = 'us', maxPercentile = 99.99): SpectrumPoint[] {
  const histogram = decodeHistogram(encoded);
  if (histogram.totalCount === 0) return [];
  const perMs = UNITS_PER_MS[unit];
  const points: SpectrumPoint[] = [];
  const steps = 40;
  const maxNines = -Math.log10(1 - maxPercentile / 100);
  for (let i = 0; i <= steps; i++) {
    const nines = (maxNines * i) / steps;
    const percentile = 100 * (1 - 10 ** -nines);
    points.push({ percentile, valueMs: histogram.getValueAtPercentile(percentile) / perMs });
  }
  return points;
}
