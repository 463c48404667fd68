/**
 * `opa test` for Gatehouse: every `test_*` rule of the `*_test.rego` files, compiled together with
 * the other modules into one module whose entrypoints are the tests, then evaluated without
 * input. A test passes when its value is `true`, fails when it is anything else or undefined, and
 * errors when the evaluation fails (a conflict, a trap).
 *
 * The tests run on the module as a policy is built for serving. When one fails, the failing tests
 * run again on a traced build (probes.ts) to say where each failed and what it got, and, asked
 * for, to give its trace (`--explain`). Coverage runs every test on the traced build.
 */
import { readFile } from 'node:fs/promises';
import type { PolicyOutput } from '../engine/host-builtins.ts';
import { PolicyInstance } from '../engine/policy-instance.ts';
import { CoverageCollector, type CoverageReport } from './coverage.ts';
import { ErrorCollector } from './error-collector.ts';
import { compileModules, type SourceFile } from './index.ts';
import type { Module } from './parse/ast.ts';
import { parseModule } from './parse/index.ts';
import type { Probe } from './probes.ts';
import { indexModule, positionKey, type IndexedExpression, type ModuleIndex } from './source-index.ts';
import { readSources } from './source-tree.ts';
import { failedAt, formatFailedAt, formatTrace, ProbeRecorder, traceSteps, type ProbeEvent, type TraceStep } from './test-explain.ts';

export type TestStatus = 'PASS' | 'FAIL' | 'ERROR';

/** What `--explain` prints of a test, as `opa test --explain`: a failing test's failures or whole trace, or every shown test's trace() notes. */
export type Explain = 'fails' | 'full' | 'notes';

export interface PolicyTestResult {
  /** The test's package, dotted as in Rego: `gatehouse.spend_approval.v1_test`. */
  package: string;
  rule: string;
  /** The test module's path. */
  file: string;
  status: TestStatus;
  durationNs: number;
  /** The value of a failing test (undefined when it had none). */
  value?: unknown;
  /** Why an erroring test failed to evaluate. */
  error?: string;
  /** A failing test's evaluation as the traced build saw it. */
  trace?: TestTrace;
  /** What the test printed (`print`) and noted (`trace`), in order. */
  output?: PolicyOutput[];
}

export interface TestTrace {
  steps: TraceStep[];
  /** The expression of the test's body where it failed, when one did (see `failedAt`). */
  failedAt?: TraceStep;
}

export interface PolicyTestReport {
  results: PolicyTestResult[];
  passed: number;
  failed: number;
  errored: number;
  /** With `coverage`: the lines the tests evaluated, as `opa test --coverage` reports them. */
  coverage?: CoverageReport;
}

export interface TestOptions {
  /** Run only the tests whose name (`data.<package>.<rule>`) this finds, as `opa test -r`. */
  run?: RegExp;
  /** Measure line coverage (see coverage.ts). */
  coverage?: boolean;
}

interface TestCase {
  package: string[];
  rule: string;
  file: string;
  /** Its entrypoint: `pkg/sub/rule`. */
  entrypoint: string;
}

/** Parses every source; throws CompileErrors with every parse error. */
function parseAll(sources: SourceFile[]): Module[] {
  const errors = new ErrorCollector();
  const modules: Module[] = [];
  for (const source of sources) {
    try {
      modules.push(parseModule(source.path, source.text));
    } catch (err) {
      errors.add(err);
    }
  }
  errors.throwIfAny();
  return modules;
}

/** The `test_*` rules of the test modules, each once. */
function discoverTests(tests: Module[]): TestCase[] {
  const cases: TestCase[] = [];
  const seen = new Set<string>();
  for (const module of tests) {
    for (const rule of module.rules) {
      const entrypoint = [...module.package, rule.name].join('/');
      if (!rule.name.startsWith('test_') || rule.kind === 'function' || seen.has(entrypoint)) continue;
      seen.add(entrypoint);
      cases.push({ package: module.package, rule: rule.name, file: module.file, entrypoint });
    }
  }
  return cases;
}

/** Evaluates one test on `instance`, keeping what it prints and notes. */
function runCase(instance: PolicyInstance, test: TestCase): PolicyTestResult {
  const id = instance.entrypoints.get(test.entrypoint);
  const output: PolicyOutput[] = [];
  instance.output = (o) => output.push(o);
  const outcome =
    id === undefined ? { value: undefined, error: `the module has no entrypoint ${test.entrypoint}`, durationNs: 0 } : instance.evaluate(undefined, id);
  instance.output = undefined;
  const result: PolicyTestResult = {
    package: test.package.join('.'),
    rule: test.rule,
    file: test.file,
    status: outcome.error ? 'ERROR' : outcome.value === true ? 'PASS' : 'FAIL',
    durationNs: outcome.durationNs,
  };
  if (outcome.error) result.error = outcome.error;
  else if (outcome.value !== true && outcome.value !== undefined) result.value = outcome.value;
  if (output.length > 0) result.output = output;
  return result;
}

/** A traced build of the sources, loaded, and what its probes point at. */
class TracedRun {
  private readonly expressions = new Map<string, IndexedExpression>();
  private readonly heads = new Map<string, string>();

  private constructor(
    private readonly instance: PolicyInstance,
    private readonly recorder: ProbeRecorder,
    readonly probes: Probe[],
    indexes: ModuleIndex[],
  ) {
    for (const { expressions, heads } of indexes) {
      for (const e of expressions) this.expressions.set(positionKey(e.literal.pos.file, e.literal.pos.offset), e);
      for (const h of heads) this.heads.set(positionKey(h.pos.file, h.pos.offset), h.rule);
    }
  }

  static async load(sources: SourceFile[], entrypoints: string[], data: unknown, indexes: ModuleIndex[]): Promise<TracedRun> {
    const compiled = await compileModules(sources, { entrypoints, probes: true });
    const recorder = new ProbeRecorder();
    const instance = await PolicyInstance.load(compiled.wasm, data, {}, recorder.builtins());
    return new TracedRun(instance, recorder, compiled.probes!, indexes);
  }

  /** Runs a test; returns its result and the probe events of its evaluation. */
  run(test: TestCase): { result: PolicyTestResult; events: ProbeEvent[] } {
    this.recorder.take();
    const result = runCase(this.instance, test);
    return { result, events: this.recorder.take() };
  }

  /** Runs a test, and traces it when it fails. */
  runTraced(test: TestCase): { result: PolicyTestResult; events: ProbeEvent[] } {
    const { result, events } = this.run(test);
    if (result.status === 'FAIL') result.trace = this.trace(test, events);
    return { result, events };
  }

  private trace(test: TestCase, events: ProbeEvent[]): TestTrace {
    const steps = traceSteps(events, this.probes, this.expressions, this.heads);
    const at = failedAt(steps, ['data', ...test.package, test.rule].join('.'));
    return { steps, ...(at ? { failedAt: at } : {}) };
  }
}

function count(report: PolicyTestReport, result: PolicyTestResult): void {
  report.results.push(result);
  if (result.status === 'PASS') report.passed++;
  else if (result.status === 'FAIL') report.failed++;
  else report.errored++;
}

/**
 * Runs the Rego tests of `sources` (directories and files, see `readSources`). Throws
 * CompileErrors when the policies or tests do not compile; test outcomes, including evaluation
 * errors, are in the report.
 */
export async function runPolicyTests(sources: string | string[], opts: TestOptions = {}): Promise<PolicyTestReport> {
  const tree = await readSources(typeof sources === 'string' ? [sources] : sources);
  const files = [...tree.modules, ...tree.tests];
  const modules = parseAll(files);
  // As `opa test -r`: the pattern is searched in the test's full name, data.<package>.<rule>.
  const cases = discoverTests(modules.slice(tree.modules.length)).filter(
    (c) => !opts.run || opts.run.test(['data', ...c.package, c.rule].join('.')),
  );
  const indexes = modules.map(indexModule);
  const report: PolicyTestReport = { results: [], passed: 0, failed: 0, errored: 0 };
  const entrypoints = cases.map((c) => c.entrypoint);
  const data: unknown = tree.dataFile ? JSON.parse(await readFile(tree.dataFile, 'utf8')) : {};

  if (opts.coverage) {
    const traced = cases.length > 0 ? await TracedRun.load(files, entrypoints, data, indexes) : undefined;
    const coverage = new CoverageCollector(traced?.probes ?? []);
    for (const test of traced ? cases : []) {
      const { result, events } = traced!.runTraced(test);
      coverage.add(events);
      count(report, result);
    }
    report.coverage = coverage.report(indexes);
    return report;
  }
  if (cases.length === 0) return report;

  const compiled = await compileModules(files, { entrypoints });
  const instance = await PolicyInstance.load(compiled.wasm, data);
  for (const test of cases) count(report, runCase(instance, test));
  const failing = report.results.filter((r) => r.status === 'FAIL');
  if (failing.length > 0) {
    const traced = await TracedRun.load(files, entrypoints, data, indexes);
    for (const result of failing) {
      const test = cases.find((c) => c.file === result.file && c.rule === result.rule)!;
      const trace = traced.runTraced(test).result.trace;
      if (trace) result.trace = trace;
    }
  }
  return report;
}

function formatDuration(ns: number): string {
  return ns >= 1e6 ? `${(ns / 1e6).toFixed(1)}ms` : `${(ns / 1e3).toFixed(0)}µs`;
}

/**
 * The report as `opa test` prints it: failures and errors always, passes when `verbose`, then
 * the closing line `N passed, N failed` (erroring tests count as failed there). Under a failing
 * test, where it failed and what it got; with `explain` `fails` or `full`, its trace.
 */
export function formatTestReport(report: PolicyTestReport, verbose = false, explain?: Explain): string {
  const lines: string[] = [];
  for (const r of report.results) {
    if (r.status === 'PASS' && !verbose) continue;
    let line = `${r.status} data.${r.package}.${r.rule} (${formatDuration(r.durationNs)})`;
    if (r.status === 'FAIL') line += r.value === undefined ? ': undefined' : `: got ${JSON.stringify(r.value)}`;
    if (r.status === 'ERROR') line += `: ${r.error}`;
    lines.push(line);
    if (r.trace?.failedAt) lines.push(...formatFailedAt(r.trace.failedAt).map((l) => `  ${l}`));
    // As `opa test`: what a test printed under it (a passing one's only with --verbose), its notes with --explain notes.
    const printed = r.output?.filter((o) => o.kind === 'print') ?? [];
    if (printed.length > 0) lines.push('', ...printed.map((o) => `  ${o.text}`), '');
    if (explain === 'notes') lines.push(...(r.output ?? []).filter((o) => o.kind === 'note').map((o) => `  | Note ${JSON.stringify(o.text)}`));
    if (r.trace && (explain === 'fails' || explain === 'full')) {
      lines.push('', ...formatTrace(r.trace.steps, explain).map((l) => `    ${l}`), '');
    }
  }
  if (report.errored > 0) lines.push(`${report.errored} of the failures were evaluation errors`);
  lines.push(`${report.passed} passed, ${report.failed + report.errored} failed`);
  return lines.join('\n');
}
