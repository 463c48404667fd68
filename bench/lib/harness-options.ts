/**
 * The command line of `npm run bench`: what to run, for how long, and what to do with it.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';

export interface HarnessOptions {
  help: boolean;
  /** Scenario names asked for with `--scenario`; null = every scenario present. */
  scenarios: string[] | null;
  quick: boolean;
  durationS: number;
  warmupS: number;
  rates: number[];
  connections: number;
  check: boolean;
  targetsFile: string;
  profile: boolean;
  outDir: string;
}

export const USAGE = `npm run bench -- [options]

Runs the benchmark scenarios of bench/scenarios/, each against its baselines in the same run,
and writes JSON results, a Markdown summary and SVG charts.

  --scenario a,b        run only these scenarios (default: all present)
  --quick               smoke run: tiny durations and one rate; proves the suite works, never judges
                        speed (so it does not go with --check; a short judged run: --duration 1 --warmup 0.5)
  --duration S          seconds per measured phase (default 10; quick 1)
  --warmup S            unrecorded seconds before each phase (default 3; quick 0.5)
  --rate, --rates R,R   fixed rates for open-loop latency runs (default 1000,2500,5000; quick 1000)
  --connections N       connections for closed-loop maximum-throughput runs (default 64; quick 16)
  --check               compare with the targets file; exit 1 naming every miss
  --targets FILE        the targets file (default bench/targets.json)
  --profile             record a CPU profile of the sidecar and print its top functions
  --out DIR             where results go (default bench/results for a full run, bench/results/partial
                        for --scenario or --quick, so a partial run never replaces the full one)
  --help                this text
`;

/** A usage error: printed with the usage text, exit code 2. */
export class UsageError extends Error {}

function number(name: string, text: string, { integer = false, zero = false } = {}): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n < 0 || (n === 0 && !zero) || (integer && !Number.isInteger(n))) {
    throw new UsageError(`--${name} expects a ${zero ? 'non-negative' : 'positive'} ${integer ? 'integer' : 'number'}, got "${text}"`);
  }
  return n;
}

export function parseHarnessOptions(argv: string[], root: string): HarnessOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        scenario: { type: 'string' },
        quick: { type: 'boolean', default: false },
        duration: { type: 'string' },
        warmup: { type: 'string' },
        rate: { type: 'string' },
        rates: { type: 'string' },
        connections: { type: 'string' },
        check: { type: 'boolean', default: false },
        targets: { type: 'string' },
        profile: { type: 'boolean', default: false },
        out: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const v = parsed.values;
  const quick = v.quick;
  // A smoke run's figures say nothing about speed: it must never print a pass or a miss.
  if (quick && v.check) throw new UsageError('--quick never judges speed: leave out --check, or give short durations instead (--duration 1 --warmup 0.5)');
  const rateList = v.rates ?? v.rate;
  return {
    help: v.help,
    scenarios: v.scenario ? v.scenario.split(',').map((s) => s.trim()).filter(Boolean) : null,
    quick,
    durationS: v.duration !== undefined ? number('duration', v.duration) : quick ? 1 : 10,
    warmupS: v.warmup !== undefined ? number('warmup', v.warmup, { zero: true }) : quick ? 0.5 : 3,
    rates: rateList !== undefined ? rateList.split(',').map((r) => number('rates', r)) : quick ? [1000] : [1000, 2500, 5000],
    connections: v.connections !== undefined ? number('connections', v.connections, { integer: true }) : quick ? 16 : 64,
    check: v.check,
    targetsFile: path.resolve(v.targets ?? path.join(root, 'bench/targets.json')),
    profile: v.profile,
    outDir: path.resolve(v.out ?? path.join(root, v.scenario || quick ? 'bench/results/partial' : 'bench/results')),
  };
}
