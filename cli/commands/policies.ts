/**
 * `gatehouse policies`: build Rego policies into Wasm modules, run Rego tests, build the runtime.
 */
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { compileErrorsOf } from '../../policies/compiler/error-collector.ts';

export const summary = 'build and test Rego policies, build the Wasm runtime they link against';

const USAGE = `usage: gatehouse policies <command>

commands:
  build <dir> --out <outdir> [--ir]   compile every <name>-v<N>.rego of <dir> into <outdir>
                                      (--ir also writes each policy's plan as <name>.ir.txt)
  test <dir> [--verbose]              run the test_* rules of <dir>'s *_test.rego files
                                      (--verbose lists passing tests too)
  runtime                             build the Wasm runtime every policy links against`;

/** A command line that does not fit the usage: exit code 2. */
class UsageError extends Error {}

function parse(args: string[], options: ParseArgsConfig['options'], positionals: number) {
  let parsed;
  try {
    parsed = parseArgs({ args, options: options ?? {}, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (parsed.positionals.length !== positionals) {
    throw new UsageError(`expected ${positionals} argument${positionals === 1 ? '' : 's'}, got ${parsed.positionals.length}`);
  }
  return parsed;
}

function formatKiB(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KiB`;
}

async function build(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, { out: { type: 'string' }, ir: { type: 'boolean' } }, 1);
  if (typeof values.out !== 'string') throw new UsageError('--out <outdir> is required');
  const [sourceDir] = positionals as [string];
  const { buildPolicies } = await import('../../policies/compiler/build.ts');
  const result = await buildPolicies(sourceDir, values.out, { ir: values.ir === true });
  const names = Object.keys(result.policies).sort();
  const width = Math.max(0, ...names.map((n) => n.length));
  for (const name of names) {
    const stats = result.compiled[name]!;
    const entrypoints = result.policies[name]!.entrypoints.length;
    console.log(
      `${name.padEnd(width)}  ${stats.compileMs.toFixed(1).padStart(8)} ms  ${formatKiB(stats.moduleBytes).padStart(10)}  ${entrypoints} entrypoints`,
    );
  }
  console.log(`built ${names.length} ${names.length === 1 ? 'policy' : 'policies'} into ${path.resolve(values.out)}`);
  return 0;
}

async function test(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, { verbose: { type: 'boolean', short: 'v' } }, 1);
  const { runPolicyTests, formatTestReport } = await import('../../policies/compiler/test-runner.ts');
  const report = await runPolicyTests(positionals[0]!);
  console.log(formatTestReport(report, values.verbose === true));
  return report.failed + report.errored > 0 ? 1 : 0;
}

async function runtime(args: string[]): Promise<number> {
  parse(args, {}, 0);
  const { ensureRuntime, RUNTIME_WASM_PATH } = await import('../../policies/runtime/build.ts');
  const wasm = await ensureRuntime();
  console.log(`runtime ready: ${path.relative(process.cwd(), RUNTIME_WASM_PATH)} (${formatKiB(wasm.byteLength)})`);
  return 0;
}

const SUBCOMMANDS: Record<string, (args: string[]) => Promise<number>> = { build, test, runtime };

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
  try {
    return await subcommand(rest);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`gatehouse policies ${name}: ${err.message}\n\n${USAGE}`);
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
