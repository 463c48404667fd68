/**
 * bench/results/summary.md: the run's machine and commit, the target check, and per scenario a
 * table of its runs, its headline metrics, notes and charts.
 */
import type { ScenarioRecord, SummaryRecord } from './result-records.ts';
import { runName } from './series-metrics.ts';
import { bound } from './targets.ts';
import { formatNumber } from './svg-chart.ts';

/** A latency with three significant digits at most. */
function latency(value: number): string {
  return value >= 100 ? value.toFixed(0) : value >= 1 ? value.toFixed(2) : String(Number(value.toPrecision(3)));
}


function cell(text: string): string {
  return text.replace(/\|/g, '\\|');
}

export function describeRun(summary: SummaryRecord): string[] {
  const { machine, git, options, generator, date } = summary.run;
  const commit = git.commit ? `\`${git.commit}\`${git.dirty ? ' (uncommitted changes)' : ''}` : 'unknown commit';
  const lines = [
    `Run ${date} at commit ${commit}, ${options.quick ? '**quick smoke run — not a measurement**, ' : ''}` +
      `${options.durationS} s per phase after ${options.warmupS} s warm-up, rates ${options.rates.join(', ')}/s, ${options.connections} connections.`,
    '',
    `Machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.totalMemoryGiB} GiB, Node ${machine.node} (${machine.platform}), load average ${machine.loadAverage1m} at the start.`,
  ];
  if (generator) {
    lines.push('', `Load generator ceiling (closed loop against a raw uWebSockets.js handler, ${generator.connections} connections, ${generator.processes} process${generator.processes > 1 ? 'es' : ''}): **${formatNumber(generator.ceiling)} req/s**, p50 ${latency(generator.latencyMs.p50)} ms.`);
  }
  return lines;
}

function checkTable(summary: SummaryRecord): string[] {
  if (!summary.check) return [];
  const lines = ['## Targets', '', '| scenario | target | metric | bound | measured | result |', '|---|---|---|---|---|---|'];
  for (const o of summary.check) {
    const result = o.status === 'pass' ? 'pass' : o.status === 'miss' ? `**MISS** ${cell(o.detail)}` : 'not run';
    lines.push(`| ${o.target.scenario} | ${cell(o.target.description)} | \`${o.target.metric}\` | ${bound(o.target)} | ${o.value ?? '—'} | ${result} |`);
  }
  return [...lines, ''];
}

function scenarioSection(record: ScenarioRecord, ownMetrics: Record<string, number>): string[] {
  const lines = [`## ${record.scenario}`, '', record.description, ''];
  if (record.error) return [...lines, `**Failed:** ${record.error}`, ''];
  if (record.series.length > 0) {
    // Microsecond operations in µs, as the charts show them.
    const inUs = record.series.every((s) => s.latencyMs.p50 < 0.1);
    const unit = inUs ? 'µs' : 'ms';
    const show = (value: number) => latency(inUs ? value * 1000 : value);
    const cpu = record.series.some((s) => s.cpuUsPerRequest !== undefined);
    lines.push(
      `| target | run | throughput /s | p50 ${unit} | p90 ${unit} | p99 ${unit} | p99.9 ${unit} | max ${unit} | errors |${cpu ? ' server CPU µs/request |' : ''}`,
      `|---|---|---:|---:|---:|---:|---:|---:|---:|${cpu ? '---:|' : ''}`,
    );
    for (const s of record.series) {
      const l = s.latencyMs;
      const name = s.baseline ? `${s.target} (baseline)` : `**${s.target}**`;
      const cpuCell = cpu ? ` ${s.cpuUsPerRequest ?? '—'} |` : '';
      lines.push(`| ${name} | ${runName(s)} | ${formatNumber(s.throughput)} | ${show(l.p50)} | ${show(l.p90)} | ${show(l.p99)} | ${show(l.p999)} | ${show(l.max)} | ${s.errors} |${cpuCell}`);
    }
    lines.push('');
  }
  const metricNames = Object.keys(ownMetrics);
  if (metricNames.length > 0) {
    lines.push('| metric | value |', '|---|---:|');
    for (const name of metricNames) lines.push(`| \`${name}\` | ${ownMetrics[name]} |`);
    lines.push('');
  }
  for (const note of record.notes) lines.push(`- ${note}`);
  if (record.notes.length > 0) lines.push('');
  for (const [label, rows] of Object.entries(record.hotFunctions)) {
    lines.push(`Top functions by self time, ${label} (profile \`${record.profiles[label]}\`):`, '', '| self % | function | location |', '|---:|---|---|');
    for (const r of rows.slice(0, 10)) lines.push(`| ${r.selfPercent} | \`${cell(r.function)}\` | ${cell(r.location)} |`);
    lines.push('');
  }
  for (const chart of record.charts) lines.push(`![${record.scenario} ${chart}](${chart})`);
  if (record.charts.length > 0) lines.push('');
  return lines;
}

export function renderSummaryMarkdown(summary: SummaryRecord, records: ScenarioRecord[]): string {
  const lines = ['# Benchmark results', '', ...describeRun(summary), '', ...checkTable(summary)];
  for (const record of records) {
    const own = summary.scenarios.find((s) => s.scenario === record.scenario)?.metrics ?? {};
    lines.push(...scenarioSection(record, own));
  }
  return `${lines.join('\n').trimEnd()}\n`;
}
