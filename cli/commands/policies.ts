/**
 * `gatehouse policies`: the OPA-style tooling (build, test, eval, check, fmt) over Gatehouse's Rego compiler,
 * and building the Wasm runtime the policies link against.
 */
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { compileErrorsOf } from '../../policies/compiler/error-collector.ts';
import type { SourceFile } from '../../policies/compiler/index.ts';

export const summary = 'build, test, evaluate, check and format Rego policies; build the Wasm runtime';

/** One subcommand: its usage (printed by `--help`) and what it runs. */
interface Subcommand {
  usage: string;
  run(args: string[]): Promise<number>;
}

/** A command line that does not fit the usage: exit code 2. */
class UsageError extends Error {}

/** `--help` on a subcommand: print its usage, exit 0. */
class HelpRequested extends Error {}

const HELP = { help: { type: 'boolean', short: 'h' } } as const;

function parse<O extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: O, positionals: { min: number; max: number }) {
  let parsed;
  try {
    parsed = parseArgs({ args, options: { ...options, ...HELP }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if ((parsed.values as { help?: boolean }).help) throw new HelpRequested();
  const count = parsed.positionals.length;
  if (count < positionals.min || count > positionals.max) {
    const expected = positionals.min === positionals.max ? `${positionals.min}` : positionals.max === Infinity ? `at least ${positionals.min}` : `${positionals.min} to ${positionals.max}`;
    throw new UsageError(`expected ${expected} argument${positionals.max === 1 ? '' : 's'}, got ${count}`);
  }
  return parsed;
}

function formatKiB(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KiB`;
}

async function build(args: string[]): Promise<number> {
  const { values, positionals } = parse(
    args,
    { out: { type: 'string' }, ir: { type: 'boolean' }, entrypoint: { type: 'string', short: 'e', multiple: true } },
    { min: 1, max: Infinity },
  );
  if (typeof values.out !== 'string') throw new UsageError('--out <outdir> is required');
  const { buildPolicies } = await import('../../policies/compiler/build.ts');
  const result = await buildPolicies(positionals, values.out, {
    ir: values.ir === true,
    requirePolicy: true,
    ...(values.entrypoint ? { entrypoints: values.entrypoint } : {}),
  });
  const names = Object.keys(result.policies).sort();
  const width = Math.max(0, ...names.map((n) => n.length));
  for (const name of names) {
    const stats = result.compiled[name]!;
    const entrypoints = result.policies[name]!.entrypoints.length;
    console.log(
      `${name.padEnd(width)}  ${stats.compileMs.toFixed(1).padStart(8)} ms  ${formatKiB(stats.moduleBytes).padStart(10)}  ${entrypoints} entrypoint${entrypoints === 1 ? '' : 's'}` +
        (stats.hostBuiltins.length ? `  host builtins: ${stats.hostBuiltins.join(', ')}` : ''),
    );
  }
  console.log(`built ${names.length} ${names.length === 1 ? 'policy' : 'policies'} into ${path.resolve(values.out)}`);
  return 0;
}

const EXPLAIN = ['fails', 'full', 'notes'] as const;

async function test(args: string[]): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
      verbose: { type: 'boolean', short: 'v' },
      run: { type: 'string', short: 'r' },
      explain: { type: 'string' },
      coverage: { type: 'boolean', short: 'c' },
      threshold: { type: 'string' },
    },
    { min: 1, max: Infinity },
  );
  let run: RegExp | undefined;
  try {
    run = values.run === undefined ? undefined : new RegExp(values.run);
  } catch (err) {
    throw new UsageError(`-r: ${(err as Error).message}`);
  }
  const explain = values.explain as (typeof EXPLAIN)[number] | undefined;
  if (explain !== undefined && !EXPLAIN.includes(explain)) throw new UsageError(`--explain is ${EXPLAIN.join(', ')}, not '${values.explain}'`);
  const threshold = values.threshold === undefined ? undefined : Number(values.threshold);
  if (threshold !== undefined && !(threshold >= 0 && threshold <= 100)) throw new UsageError(`--threshold is a percentage, not '${values.threshold}'`);
  if (threshold !== undefined && !values.coverage) throw new UsageError('--threshold needs --coverage');

  const { runPolicyTests, formatTestReport } = await import('../../policies/compiler/test-runner.ts');
  const report = await runPolicyTests(positionals, { ...(run ? { run } : {}), coverage: values.coverage === true });
  const failed = report.failed + report.errored > 0;
  if (!report.coverage) {
    console.log(formatTestReport(report, values.verbose === true, explain));
    return failed ? 1 : 0;
  }
  // As opa test --coverage: the report is the output; what failed goes to stderr.
  if (failed || values.verbose) console.error(formatTestReport(report, values.verbose === true, explain));
  console.log(JSON.stringify(report.coverage, null, 2));
  if (failed) return 1;
  if (threshold !== undefined && report.coverage.coverage < threshold) {
    console.error(`Code coverage threshold not met: got ${report.coverage.coverage.toFixed(2)} instead of ${threshold.toFixed(2)}`);
    return 2;
  }
  return 0;
}

/** What `-d` names: directories (their modules, tests and top-level data.json), `.rego` and `.json` files. */
async function loadSources(paths: string[]): Promise<{ modules: SourceFile[]; data: Record<string, unknown> }> {
  const { readSourceTree } = await import('../../policies/compiler/source-tree.ts');
  const { readJson } = await import('../../policies/engine/registry.ts');
  const modules: SourceFile[] = [];
  const data: Record<string, unknown> = {};
  const addData = async (file: string) => {
    const doc = await readJson(file);
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new Error(`${file}: a data document must be an object`);
    Object.assign(data, doc);
  };
  for (const p of paths) {
    if ((await stat(p)).isDirectory()) {
      const tree = await readSourceTree(p);
      modules.push(...tree.modules, ...tree.tests);
      if (tree.dataFile) await addData(tree.dataFile);
    } else if (p.endsWith('.json')) {
      await addData(p);
    } else {
      modules.push({ path: p, text: await readFile(p, 'utf8') });
    }
  }
  return { modules, data };
}

async function evaluate(args: string[]): Promise<number> {
  const { values, positionals } = parse(
    args,
    { data: { type: 'string', short: 'd', multiple: true }, input: { type: 'string', short: 'i' }, format: { type: 'string', short: 'f', default: 'json' } },
    { min: 1, max: 1 },
  );
  if (values.format !== 'json' && values.format !== 'pretty') throw new UsageError(`--format is json or pretty, not '${values.format}'`);
  const { evaluateQuery, formatPretty } = await import('../../policies/compiler/query.ts');
  const { modules, data } = await loadSources(values.data ?? []);
  const { readJson } = await import('../../policies/engine/registry.ts');
  const input = values.input === undefined ? undefined : await readJson(values.input);
  const output = await evaluateQuery(positionals[0]!, { modules, data, input, print: (line) => console.error(line) });
  console.log(values.format === 'pretty' ? formatPretty(output) : JSON.stringify(output, null, 2));
  return 0;
}

async function check(args: string[]): Promise<number> {
  const { positionals } = parse(args, {}, { min: 1, max: Infinity });
  const { checkModules } = await import('../../policies/compiler/index.ts');
  const { modules } = await loadSources(positionals);
  checkModules(modules);
  return 0;
}

async function format(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, { check: { type: 'boolean' }, write: { type: 'boolean', short: 'w' } }, { min: 1, max: Infinity });
  if (values.check && values.write) throw new UsageError('--check and -w exclude each other');
  const { formatModule, FormatError } = await import('../../policies/compiler/format/index.ts');
  const { ErrorCollector } = await import('../../policies/compiler/error-collector.ts');
  const { modules } = await loadSources(positionals);
  const errors = new ErrorCollector();
  const refused: string[] = [];
  let changed = 0;
  for (const file of modules) {
    let formatted: string;
    try {
      formatted = formatModule(file.path, file.text);
    } catch (err) {
      if (err instanceof FormatError) refused.push(err.message);
      else errors.add(err);
      continue;
    }
    if (values.check || values.write) {
      if (formatted === file.text) continue;
      changed++;
      if (values.write) await writeFile(file.path, formatted);
      console.log(file.path);
    } else {
      process.stdout.write(formatted);
    }
  }
  for (const message of refused) console.error(message);
  errors.throwIfAny();
  return refused.length > 0 || (values.check && changed > 0) ? 1 : 0;
}

async function runtime(args: string[]): Promise<number> {
  parse(args, {}, { min: 0, max: 0 });
  const { ensureRuntime, RUNTIME_WASM_PATH } = await import('../../policies/runtime/build.ts');
  const wasm = await ensureRuntime();
  console.log(`runtime ready: ${path.relative(process.cwd(), RUNTIME_WASM_PATH)} (${formatKiB(wasm.byteLength)})`);
  return 0;
}

const SUBCOMMANDS: Record<string, Subcommand> = {
  build: {
    usage: `build <dir|file>… --out <outdir> [-e <entrypoint>]… [--ir]
    Compile the Rego of the directories (read recursively) and files named into <outdir>, one
    Wasm module per policy, every other module a library they can import; bundles (.tar.gz) and
    a data document (data.json at a directory's top, or a .json file named) are copied beside.
    Without -e, every file named <name>-v<N>.rego is the policy <name>-v<N>, its entrypoints the
    package document (entrypoint 0, what a decision evaluates) and each rule of its package.
    -e picks entrypoints as opa build -e does (pkg/rule or data.pkg.rule, repeatable): only the
    policies holding them are built, each with the entrypoints under its package in the order
    given; the module whose package holds an entrypoint names the policy by its file, whatever
    the name (authz.rego: authz). Finding no policy is an error (exit 1), as is any compile
    error, all of them reported. --ir also writes each policy's plan as <name>.ir.txt.`,
    run: build,
  },
  test: {
    usage: `test <dir|file>… [-r <regex>] [--verbose] [--explain fails|full|notes] [--coverage [--threshold <pct>]]
    Run the test_* rules of the *_test.rego files, with the other modules and data.json of the
    directories and files named, like opa test. A failing test is shown with the expression of
    its body where it failed and what that got (got and expected for a == with a constant side,
    each side of other comparisons, the value of a condition; undefined when it had none).
    -r runs only the tests whose name (data.<package>.<rule>) the regex finds;
    --verbose (-v) lists passing tests too;
    --explain fails also prints, under a failing test, every expression that failed while it ran
    (Fail file:line expression, with its values), in order; full prints every expression
    evaluated (Eval when it held, Fail when not) and every rule that produced a value (Exit);
    notes prints the notes of trace("…") calls under each test shown (| Note "…").
    What a test prints (print(x, …)) is shown under it when it fails, and with --verbose.
    --coverage (-c) prints, instead of the test report, the line coverage as opa test --coverage
    does (JSON: per file the covered and not_covered line ranges and a percentage, and the
    overall percentage): a line is covered when an expression starting on it was evaluated, or
    a rule whose head is on it produced a value, during the tests. Failures go to stderr (exit
    1); --threshold <pct> exits 2 when the overall coverage is below it.
    Tests run on modules built as for serving; to trace failures and measure coverage, the
    tests run on a build that reports each expression it evaluates to the test runner.`,
    run: test,
  },
  eval: {
    usage: `eval '<query>' [-d <dir|file>]… [-i <input.json>] [--format json|pretty]
    Evaluate a Rego query, like opa eval, on a module compiled from the query and the Rego of
    each -d (a directory: its modules, tests and top-level data.json; or a .rego or .json file).
    --format json (default) prints OPA's result set; pretty prints the value alone.`,
    run: evaluate,
  },
  check: {
    usage: `check <dir|file>…
    Parse and check the Rego of each directory or file, like opa check: names, safety,
    recursion. Prints the errors (file:line:col, the line, a caret); exit 1 when there are any.`,
    run: check,
  },
  fmt: {
    usage: `fmt <dir|file>… [--check | -w]
    Format Rego canonically, like opa fmt. Prints the formatted modules; --check lists the files
    that are not formatted (exit 1 if any); -w rewrites them in place and lists them. A module
    the formatter cannot print faithfully is refused and left as it is (exit 1).`,
    run: format,
  },
  runtime: {
    usage: `runtime
    Build the Wasm runtime every policy links against.`,
    run: runtime,
  },
};

const USAGE = `usage: gatehouse policies <command> [options]   (gatehouse policies <command> --help)

commands:
${Object.values(SUBCOMMANDS)
  .map((s) => `  ${s.usage.split('\n')[0]}`)
  .join('\n')}`;

/** Runs `gatehouse policies …`; returns the exit code (1 for compile errors, 2 for usage). */
export async function run(args: string[]): Promise<number> {
  const [name, ...rest] = args;
  if (name === '--help' || name === '-h') {
    console.log(USAGE);
    return 0;
  }
  const subcommand = name ? SUBCOMMANDS[name] : undefined;
  if (!subcommand) {
    console.error(name ? `gatehouse policies: unknown command '${name}'\n\n${USAGE}` : USAGE);
    return 2;
  }
  const usage = `usage: gatehouse policies ${subcommand.usage}`;
  try {
    return await subcommand.run(rest);
  } catch (err) {
    if (err instanceof HelpRequested) {
      console.log(usage);
      return 0;
    }
    if (err instanceof UsageError) {
      console.error(`gatehouse policies ${name}: ${err.message}\n\n${usage}`);
      return 2;
    }
    const compileErrors = compileErrorsOf(err);
    if (compileErrors) {
      for (const e of compileErrors) console.error(e.format());
      console.error(`${compileErrors.length} compile error${compileErrors.length === 1 ? '' : 's'}`);
      return 1;
    }
    console.error(`gatehouse policies ${name}: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}
