/**
 * `opa test` for Gatehouse: every `test_*` rule of the `*_test.rego` files, compiled together with
 * the directory's other modules into one module whose entrypoints are the tests, then evaluated
 * without input. A test passes when its value is `true`, fails when it is anything else or
 * undefined, and errors when the evaluation fails (a conflict, a trap).
 */
import { readFile } from 'node:fs/promises';
import { PolicyInstance } from '../engine/policy-instance.ts';
import { ErrorCollector } from './error-collector.ts';
import { compileModules } from './index.ts';
import type { Module } from './parse/ast.ts';
import { parseModule } from './parse/index.ts';
import { readSourceTree, type RegoSource } from './source-tree.ts';

export type TestStatus = 'PASS' | 'FAIL' | 'ERROR';

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
}

export interface PolicyTestReport {
  results: PolicyTestResult[];
  passed: number;
  failed: number;
  errored: number;
}

interface TestCase {
  package: string[];
  rule: string;
  file: string;
}

/** Finds the tests; throws CompileErrors when a module does not parse. */
function discoverTests(tests: RegoSource[]): TestCase[] {
  const cases: TestCase[] = [];
  const seen = new Set<string>();
  const errors = new ErrorCollector();
  for (const source of tests) {
    let module: Module;
    try {
      module = parseModule(source.path, source.text);
    } catch (err) {
      errors.add(err);
      continue;
    }
    for (const rule of module.rules) {
      const key = [...module.package, rule.name].join('/');
      if (!rule.name.startsWith('test_') || rule.kind === 'function' || seen.has(key)) continue;
      seen.add(key);
      cases.push({ package: module.package, rule: rule.name, file: source.path });
    }
  }
  errors.throwIfAny();
  return cases;
}

/**
 * Runs the Rego tests of `dir` (those whose name `run` finds, when given). Throws CompileErrors when the policies or tests do not compile;
 * test outcomes, including evaluation errors, are in the report.
 */
export async function runPolicyTests(dir: string, opts: { run?: RegExp } = {}): Promise<PolicyTestReport> {
  const tree = await readSourceTree(dir);
  // As `opa test -r`: the pattern is searched in the test's full name, data.<package>.<rule>.
  const cases = discoverTests(tree.tests).filter((c) => !opts.run || opts.run.test(['data', ...c.package, c.rule].join('.')));
  const report: PolicyTestReport = { results: [], passed: 0, failed: 0, errored: 0 };
  if (cases.length === 0) return report;

  const entrypoints = cases.map((c) => [...c.package, c.rule].join('/'));
  const compiled = await compileModules([...tree.modules, ...tree.tests], { entrypoints });
  const data: unknown = tree.dataFile ? JSON.parse(await readFile(tree.dataFile, 'utf8')) : {};
  const instance = await PolicyInstance.load(compiled.wasm, data);

  for (const [i, test] of cases.entries()) {
    const id = instance.entrypoints.get(entrypoints[i]!);
    const outcome =
      id === undefined
        ? { value: undefined, error: `the module has no entrypoint ${entrypoints[i]}`, durationNs: 0 }
        : instance.evaluate(undefined, id);
    const result: PolicyTestResult = {
      package: test.package.join('.'),
      rule: test.rule,
      file: test.file,
      status: outcome.error ? 'ERROR' : outcome.value === true ? 'PASS' : 'FAIL',
      durationNs: outcome.durationNs,
    };
    if (outcome.error) result.error = outcome.error;
    else if (outcome.value !== true && outcome.value !== undefined) result.value = outcome.value;
    report.results.push(result);
    if (result.status === 'PASS') report.passed++;
    else if (result.status === 'FAIL') report.failed++;
    else report.errored++;
  }
  return report;
}

function formatDuration(ns: number): string {
  return ns >= 1e6 ? `${(ns / 1e6).toFixed(1)}ms` : `${(ns / 1e3).toFixed(0)}µs`;
}

/**
 * The report as `opa test` prints it: failures and errors always, passes when `verbose`, then
 * the closing line `N passed, N failed` (erroring tests count as failed there).
 */
export function formatTestReport(report: PolicyTestReport, verbose = false): string {
  const lines: string[] = [];
  for (const r of report.results) {
    if (r.status === 'PASS' && !verbose) continue;
    let line = `${r.status} data.${r.package}.${r.rule} (${formatDuration(r.durationNs)})`;
    if (r.status === 'FAIL') line += r.value === undefined ? ': undefined' : `: got ${JSON.stringify(r.value)}`;
    if (r.status === 'ERROR') line += `: ${r.error}`;
    lines.push(line);
  }
  if (report.errored > 0) lines.push(`${report.errored} of the failures were evaluation errors`);
  lines.push(`${report.passed} passed, ${report.failed + report.errored} failed`);
  return lines.join('\n');
}
