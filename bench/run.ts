/**
 * `npm run bench`: runs the scenarios of bench/scenarios/ one after another, each against its
 * baselines in the same run, then writes bench/results/<scenario>.json, summary.json,
 * summary.md and charts/*.svg, and with `--check` holds the metrics against bench/targets.json.
 * `--help` lists the options; docs/bench.md explains the method and the files.
 *
 * Exit codes: 0 all ran (and met the targets, with `--check`); 1 a scenario failed or a target
 * was missed; 2 a usage error.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ScenarioOptions, ScenarioResult } from './scenario.ts';
import { formatHotFunctions, summariseCpuProfile } from './lib/cpu-profile.ts';
import { describeCommit, describeMachine } from './lib/environment.ts';
import { measureGeneratorCeiling } from './lib/generator-ceiling.ts';
import { parseHarnessOptions, UsageError, USAGE, type HarnessOptions } from './lib/harness-options.ts';
import { DEFAULT_PROCESSES } from './lib/load.ts';
import type { RunContext, ScenarioRecord, SummaryRecord } from './lib/result-records.ts';
import { scenarioCharts } from './lib/scenario-charts.ts';
import { loadScenario, selectScenarios } from './lib/scenario-loader.ts';
import { seriesMetrics } from './lib/series-metrics.ts';
import { renderSummaryMarkdown } from './lib/summary-markdown.ts';
import { bound, checkTargets, loadTargets, type ScenarioOutcome } from './lib/targets.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SCENARIO_DIR = path.join(ROOT, 'bench/scenarios');
const STARTED = Date.now();

function progress(message: string): void {
  const s = Math.round((Date.now() - STARTED) / 1000);
  process.stderr.write(`[${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}] ${message}\n`);
}

function writeJson(file: string, value: unknown): void {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

async function runContext(options: HarnessOptions): Promise<RunContext> {
  const machine = describeMachine();
  progress(`measuring the load generator's ceiling against a raw uWebSockets.js handler …`);
  const generatorRun = { durationS: Math.min(options.durationS, 5), warmupS: Math.min(options.warmupS, 1), connections: options.connections };
  const ceiling = await measureGeneratorCeiling(generatorRun);
  progress(`generator ceiling: ${ceiling.throughput} req/s`);
  return {
    date: new Date().toISOString(),
    machine,
    git: describeCommit(ROOT),
    options: { quick: options.quick, durationS: options.durationS, warmupS: options.warmupS, rates: options.rates, connections: options.connections, profile: options.profile },
    generator: { ceiling: ceiling.throughput, latencyMs: ceiling.latencyMs, connections: options.connections, processes: DEFAULT_PROCESSES },
  };
}

/** Runs one scenario and turns what it returned into its result file's record; a throw becomes `error`. */
async function runScenario(name: string, options: HarnessOptions, run: RunContext): Promise<ScenarioRecord> {
  const workDir = mkdtempSync(path.join(os.tmpdir(), `gatehouse-bench-${name}-`));
  const started = performance.now();
  const record: ScenarioRecord = { scenario: name, description: '', run, elapsedS: 0, error: null, metrics: {}, series: [], notes: [], profiles: {}, hotFunctions: {}, charts: [] };
  try {
    const scenario = await loadScenario(SCENARIO_DIR, name);
    record.description = scenario.description;
    const scenarioOptions: ScenarioOptions = {
      quick: options.quick,
      durationS: options.durationS,
      warmupS: options.warmupS,
      rates: options.rates,
      connections: options.connections,
      profile: options.profile,
      workDir,
      progress: (message) => progress(`${name}: ${message}`),
    };
    const result: ScenarioResult = await scenario.run(scenarioOptions);
    Object.assign(record, {
      description: result.description || scenario.description,
      // The scenario's own names win over derived ones of the same name.
      metrics: { ...seriesMetrics(result.series), ...result.metrics },
      series: result.series,
      notes: result.notes,
    });
    for (const [label, file] of Object.entries(result.profiles)) {
      const kept = `${name}.${label}.cpuprofile`;
      copyFileSync(file, path.join(options.outDir, kept));
      record.profiles[label] = kept;
      record.hotFunctions[label] = summariseCpuProfile(file);
      const table = formatHotFunctions(`${name}, ${label}`, record.hotFunctions[label]);
      writeFileSync(path.join(options.outDir, `${name}.${label}.profile.txt`), `${table}\n`);
      process.stderr.write(`${table}\n`);
    }
    mkdirSync(path.join(options.outDir, 'charts'), { recursive: true });
    for (const chart of scenarioCharts(result)) {
      writeFileSync(path.join(options.outDir, 'charts', chart.file), chart.svg);
      record.charts.push(`charts/${chart.file}`);
    }
  } catch (error) {
    record.error = error instanceof Error ? error.message : String(error);
    progress(`${name}: FAILED — ${record.error}`);
    if (error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
  record.elapsedS = Math.round((performance.now() - started) / 100) / 10;
  writeJson(path.join(options.outDir, `${name}.json`), record);
  return record;
}

/** What `--help` adds to the options: the scenarios present and the targets a `--check` holds them to. */
async function catalogue(targetsFile: string): Promise<string> {
  const lines = ['', 'scenarios:'];
  for (const name of selectScenarios(SCENARIO_DIR, null)) lines.push(`  ${name.padEnd(12)} ${(await loadScenario(SCENARIO_DIR, name)).description}`);
  lines.push('', `targets (${path.relative(process.cwd(), targetsFile) || targetsFile}):`);
  for (const target of loadTargets(targetsFile)) lines.push(`  ${target.scenario} ${target.metric} ${bound(target)}: ${target.description}`);
  return `${lines.join('\n')}\n`;
}

async function main(argv: string[]): Promise<number> {
  let options: HarnessOptions;
  let names: string[];
  try {
    options = parseHarnessOptions(argv, ROOT);
    if (options.help) {
      process.stdout.write(USAGE + (await catalogue(options.targetsFile)));
      return 0;
    }
    names = selectScenarios(SCENARIO_DIR, options.scenarios);
    // A broken targets file should stop the run before it spends minutes measuring.
    if (options.check) loadTargets(options.targetsFile);
  } catch (error) {
    // Everything up to here only reads the command line and the targets file: any error is the caller's.
    const usage = error instanceof UsageError ? `\n${USAGE}` : '';
    process.stderr.write(`bench: ${(error as Error).message}\n${usage}`);
    return 2;
  }
  mkdirSync(options.outDir, { recursive: true });
  const run = await runContext(options);
  const records: ScenarioRecord[] = [];
  for (const name of names) {
    progress(`${name}: starting`);
    records.push(await runScenario(name, options, run));
    progress(`${name}: done in ${records.at(-1)!.elapsedS} s`);
  }

  const ran = new Map<string, ScenarioOutcome>(records.map((r) => [r.scenario, { metrics: r.metrics, error: r.error }]));
  const check = options.check ? checkTargets(loadTargets(options.targetsFile), ran, new Set(options.scenarios ?? [])) : null;
  const derivedNames = (r: ScenarioRecord) => new Set(Object.keys(seriesMetrics(r.series)));
  const summary: SummaryRecord = {
    run,
    scenarios: records.map((r) => {
      const derived = derivedNames(r);
      return {
        scenario: r.scenario,
        description: r.description,
        file: `${r.scenario}.json`,
        elapsedS: r.elapsedS,
        error: r.error,
        metrics: Object.fromEntries(Object.entries(r.metrics).filter(([k]) => !derived.has(k))),
        charts: r.charts,
      };
    }),
    check,
  };
  writeJson(path.join(options.outDir, 'summary.json'), summary);
  writeFileSync(path.join(options.outDir, 'summary.md'), renderSummaryMarkdown(summary, records));
  const shown = path.relative(process.cwd(), options.outDir);
  progress(`results in ${shown.startsWith('..') ? options.outDir : shown || '.'}/ (summary.md, summary.json, <scenario>.json, charts/)`);

  const failed = records.filter((r) => r.error);
  for (const r of failed) process.stderr.write(`scenario ${r.scenario} failed: ${r.error}\n`);
  const misses = check?.filter((o) => o.status === 'miss') ?? [];
  if (check) {
    for (const o of check) {
      const status = o.status === 'pass' ? 'pass   ' : o.status === 'miss' ? 'MISS   ' : 'not run';
      process.stdout.write(`${status} ${o.target.scenario} ${o.target.metric} ${o.value ?? ''} — ${o.target.description}${o.detail && o.status === 'miss' ? ` (${o.detail})` : ''}\n`);
    }
    if (misses.length > 0) process.stderr.write(`missed ${misses.length} target${misses.length > 1 ? 's' : ''}: ${misses.map((o) => `${o.target.scenario} ${o.target.metric}`).join(', ')}\n`);
  }
  return failed.length > 0 || misses.length > 0 ? 1 : 0;
}

// Exit rather than wait for the event loop to empty: a scenario that leaves a handle open must
// not hang the run (or the test that runs it).
process.exit(await main(process.argv.slice(2)));
