/**
 * The charts of one scenario's result: a latency distribution (percentile spectrum) for each run
 * that carries histograms, and a throughput-vs-latency curve across its HTTP runs.
 */
import type { ScenarioResult, Series } from '../scenario.ts';
import { percentileSpectrum } from './histogram.ts';
import { runName } from './series-metrics.ts';
import { PALETTE, renderLineChart, type ChartLine } from './svg-chart.ts';

export interface ChartFile {
  /** File name, e.g. `decisions.latency.rate5000.svg`. */
  file: string;
  title: string;
  svg: string;
}

/** Every target of the scenario with its colour: what is measured first, then its baselines. */
function colours(series: Series[]): Map<string, string> {
  const targets = [...new Set([...series.filter((s) => !s.baseline), ...series.filter((s) => s.baseline)].map((s) => s.target))];
  return new Map(targets.map((t, i) => [t, PALETTE[i % PALETTE.length]!]));
}

function describeRun(run: string): string {
  if (run === 'max') return 'closed loop at maximum throughput';
  if (run === 'micro') return 'per operation, in-process';
  return `open loop at ${Number(run.slice('rate'.length)).toLocaleString('en-US')}/s, from due time`;
}

function latencyChart(result: ScenarioResult, run: string, series: Series[], colour: Map<string, string>): ChartFile {
  const spectra = series.map((s) => ({ s, points: percentileSpectrum(s.histogram!, s.histogramUnit ?? 'us') }));
  // Microsecond operations read better in µs than as 0.00x ms.
  const inUs = series.every((s) => s.latencyMs.p50 < 0.1);
  const lines: ChartLine[] = spectra.map(({ s, points }) => ({
    label: s.target,
    color: colour.get(s.target)!,
    emphasis: !s.baseline,
    points: points.map((p) => ({ x: p.percentile, y: inUs ? p.valueMs * 1000 : p.valueMs })),
  }));
  return {
    file: `${result.scenario}.latency.${run}.svg`,
    title: `${result.scenario}: latency by percentile`,
    svg: renderLineChart({
      title: `${result.scenario}: latency by percentile`,
      subtitle: describeRun(run),
      x: { label: 'percentile (log scale of nines)', scale: 'nines' },
      y: { label: inUs ? 'latency (µs, log scale)' : 'latency (ms, log scale)', scale: 'log' },
      lines,
    }),
  };
}

/** The rate a run offered: its fixed rate, or, for the closed-loop maximum, more than any. */
function offered(series: Series): number {
  return series.mode === 'max' || series.rate === null ? Number.POSITIVE_INFINITY : series.rate;
}

function throughputChart(result: ScenarioResult, series: Series[], colour: Map<string, string>): ChartFile {
  const lines: ChartLine[] = [];
  for (const target of colour.keys()) {
    // In the order the load was offered, fixed rates rising and the closed-loop maximum last: a
    // server past its capacity achieves less at a higher offered rate, and sorting by what it
    // achieved would fold that knee back on itself.
    const runs = series.filter((s) => s.target === target).sort((a, b) => offered(a) - offered(b));
    if (runs.length === 0) continue;
    const baseline = runs[0]!.baseline;
    for (const [figure, dashed] of [['p50', false], ['p99', true]] as const) {
      lines.push({
        label: `${target} ${figure}`,
        color: colour.get(target)!,
        dashed,
        emphasis: !baseline,
        markers: true,
        points: runs.map((s) => ({ x: s.throughput, y: s.latencyMs[figure] })),
      });
    }
  }
  // Gatehouse and its ceiling can be an order of magnitude apart: then a log axis keeps both readable.
  const throughputs = series.map((s) => s.throughput).filter((x) => x > 0);
  const logX = Math.max(...throughputs) > 20 * Math.min(...throughputs);
  return {
    file: `${result.scenario}.throughput.svg`,
    title: `${result.scenario}: latency vs. throughput`,
    svg: renderLineChart({
      title: `${result.scenario}: latency vs. throughput`,
      subtitle: 'each point one run: fixed rates (open loop) and the maximum (closed loop)',
      x: logX ? { label: 'achieved throughput (per second, log scale)', scale: 'log' } : { label: 'achieved throughput (per second)', scale: 'linear' },
      y: { label: 'latency (ms, log scale)', scale: 'log' },
      lines,
    }),
  };
}

export function scenarioCharts(result: ScenarioResult): ChartFile[] {
  const colour = colours(result.series);
  const charts: ChartFile[] = [];
  const runs = [...new Set(result.series.filter((s) => s.histogram).map(runName))];
  for (const run of runs) charts.push(latencyChart(result, run, result.series.filter((s) => s.histogram && runName(s) === run), colour));
  const loadRuns = result.series.filter((s) => s.mode !== 'micro');
  if (loadRuns.length > 0) charts.push(throughputChart(result, loadRuns, colour));
  return charts;
}
