/**
 * Policy evaluation and compilation. How fast a compiled role-based policy evaluates through
 * `@open-policy-agent/opa-wasm` `evaluate`, beside the same check written by hand in JavaScript
 * (the baseline) in the same process; and how long the compiler takes on each bundled policy.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPolicy } from '@open-policy-agent/opa-wasm';
import { buildPolicies } from '../../policies/compiler/build.ts';
import { compileModules } from '../../policies/compiler/index.ts';
import { hostBuiltins } from '../../policies/engine/host-builtins.ts';
import type { LatencySummary, Scenario, ScenarioOptions, ScenarioResult, Series } from '../scenario.ts';
import { startCpuProfile } from '../lib/cpu-profile.ts';
import { createHistogram, encodeHistogram, summarise } from '../lib/histogram.ts';

const REGO_DIR = fileURLToPath(new URL('../../policies/rego', import.meta.url));

/** OPA's own `opa build -t wasm` module for the same RBAC policy, through the same SDK, median (measured once, by hand). */
const ANCHOR_NS = 3400;

// ---------------------------------------------------------------------------------------------
// Compile time of the bundled policies

interface CompileResult {
  policy: string;
  /** Wall time of each compile, in milliseconds. */
  runsMs: number[];
  medianMs: number;
  maxMs: number;
  wasmBytes: number;
}

/**
 * Builds the bundled policies the way `npm run policies:build` does (each policy with every
 * library and all its entrypoints), into a scratch directory, `repeats` times over.
 */
async function benchCompile(workDir: string, repeats: number): Promise<{ setupMs: number; results: CompileResult[] }> {
  // The first compile of the process also loads the Wasm runtime the emitter links against; that
  // is a once-per-process cost, reported on its own so it does not inflate the first policy.
  const setupStart = performance.now();
  await compileModules([{ path: 'setup.rego', text: 'package setup\n\nx := 1\n' }], { entrypoints: ['setup/x'] });
  const setupMs = performance.now() - setupStart;

  const scratch = mkdtempSync(path.join(workDir, 'compile-'));
  const runs = new Map<string, { ms: number[]; bytes: number }>();
  try {
    for (let i = 0; i < repeats; i++) {
      const build = await buildPolicies(REGO_DIR, path.join(scratch, 'build'));
      for (const [name, stats] of Object.entries(build.compiled)) {
        const entry = runs.get(name) ?? { ms: [], bytes: 0 };
        entry.ms.push(Math.round(stats.compileMs * 10) / 10);
        entry.bytes = stats.moduleBytes;
        runs.set(name, entry);
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const results = [...runs.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([policy, r]) => {
      const sorted = [...r.ms].sort((a, b) => a - b);
      return { policy, runsMs: r.ms, medianMs: sorted[Math.floor(sorted.length / 2)]!, maxMs: sorted[sorted.length - 1]!, wasmBytes: r.bytes };
    });
  return { setupMs, results };
}

// ---------------------------------------------------------------------------------------------
// Evaluation latency: RBAC through loadPolicy vs the same check in JavaScript

const RBAC_REGO = `package rbac

default allow := false

allow if {
	some r in data.user_roles[input.user]
	some p in data.role_permissions[r]
	p.action == input.action
	p.object == input.object
}
`;

interface Permission {
  action: string;
  object: string;
}

interface RbacData {
  user_roles: Record<string, string[]>;
  role_permissions: Record<string, Permission[]>;
}

interface RbacInput {
  user: string;
  action: string;
  object: string;
}

const RBAC_DATA: RbacData = {
  user_roles: {
    alice: ['admin'],
    bob: ['developer', 'viewer'],
    carol: ['billing'],
    dave: ['viewer'],
    eve: ['developer', 'billing'],
  },
  role_permissions: {
    admin: [
      { action: 'read', object: 'server' },
      { action: 'write', object: 'server' },
      { action: 'delete', object: 'server' },
      { action: 'read', object: 'invoice' },
    ],
    developer: [
      { action: 'read', object: 'server' },
      { action: 'write', object: 'server' },
      { action: 'read', object: 'repository' },
    ],
    viewer: [
      { action: 'read', object: 'server' },
      { action: 'read', object: 'repository' },
    ],
    billing: [
      { action: 'read', object: 'invoice' },
      { action: 'write', object: 'invoice' },
      { action: 'read', object: 'customer' },
    ],
  },
};

/** Every user × action × object, plus an unknown user: a mix of allows, denials found by
 * scanning, and denials found at once. Both implementations get exactly this sequence. */
function rbacInputs(): RbacInput[] {
  const users = [...Object.keys(RBAC_DATA.user_roles), 'mallory'];
  const inputs: RbacInput[] = [];
  for (const user of users)
    for (const action of ['read', 'write', 'delete'])
      for (const object of ['server', 'invoice', 'repository', 'customer']) inputs.push({ user, action, object });
  return inputs;
}

function allowJs(data: RbacData, input: RbacInput): boolean {
  const roles = data.user_roles[input.user];
  if (!roles) return false;
  for (const role of roles) {
    const permissions = data.role_permissions[role];
    if (!permissions) continue;
    for (const p of permissions) if (p.action === input.action && p.object === input.object) return true;
  }
  return false;
}

interface Timing {
  /** Calls per timed batch (1 when each call is timed on its own). */
  batch: number;
  calls: number;
  elapsedS: number;
  latencyMs: LatencySummary;
  /** HDR histogram of per-call times in ns. */
  histogram: string;
}

/** Median cost of reading the clock, which per-call timing adds to every sample. */
function timerOverheadNs(): number {
  const samples: number[] = [];
  for (let i = 0; i < 10_000; i++) {
    const a = process.hrtime.bigint();
    const b = process.hrtime.bigint();
    samples.push(Number(b - a));
  }
  samples.sort((x, y) => x - y);
  return samples[samples.length >> 1]!;
}

/**
 * Times calls of `fn` over `inputs` in order for `durationS` seconds, after `warmupS` of untimed
 * calls. Each call is timed on its own unless the clock read costs more than a tenth of a call;
 * then batches are timed (long enough for the clock to be noise) and every call in a batch is
 * recorded at the batch's average. Batching keeps the median honest and flattens the tail, which
 * the notes say.
 *
 * The answers are counted and checked against `expected`: that keeps the optimiser from
 * discarding a call whose result goes unused, and catches a policy that goes wrong mid-run.
 */
function measure<T>(fn: (input: T) => boolean, inputs: T[], expected: boolean[], options: { durationS: number; warmupS: number }, overheadNs: number): Timing {
  const warmupEnd = performance.now() + options.warmupS * 1000;
  for (let i = 0; performance.now() < warmupEnd; i += 1000) for (let j = 0; j < 1000; j++) fn(inputs[(i + j) % inputs.length]!);

  // The cost of one call, from the fastest of a few short runs: a run that the scheduler
  // interrupted says nothing about the call, and would wrongly make the clock look cheap.
  let perCallNs = Infinity;
  for (let round = 0; round < 5; round++) {
    const pilotStart = process.hrtime.bigint();
    for (let i = 0; i < 2_000; i++) fn(inputs[i % inputs.length]!);
    perCallNs = Math.min(perCallNs, Number(process.hrtime.bigint() - pilotStart) / 2_000);
  }

  const batch = overheadNs > perCallNs / 10 ? Math.max(1, Math.ceil((overheadNs * 100) / Math.max(perCallNs, 1))) : 1;
  const histogram = createHistogram();
  const started = process.hrtime.bigint();
  const end = started + BigInt(Math.round(options.durationS * 1e9));
  let done = 0;
  let allowed = 0;
  for (let start = started; start < end; ) {
    for (let j = 0; j < batch; j++) if (fn(inputs[(done + j) % inputs.length]!)) allowed++;
    const now = process.hrtime.bigint();
    histogram.recordValueWithCount(Math.max(1, Math.round(Number(now - start) / batch)), batch);
    done += batch;
    start = now;
  }
  const elapsedS = Number(process.hrtime.bigint() - started) / 1e9;
  let wantAllowed = 0;
  for (let i = 0; i < done; i++) if (expected[i % expected.length]) wantAllowed++;
  if (allowed !== wantAllowed) throw new Error(`measured calls allowed ${allowed} times, expected ${wantAllowed}`);
  return { batch, calls: done, elapsedS, latencyMs: summarise(histogram, 'ns'), histogram: encodeHistogram(histogram) };
}

function microSeries(target: string, baseline: boolean, timing: Timing): Series {
  return {
    target,
    baseline,
    mode: 'micro',
    rate: null,
    throughput: Math.round(timing.calls / timing.elapsedS),
    latencyMs: timing.latencyMs,
    operations: timing.calls,
    errors: 0,
    histogram: timing.histogram,
    histogramUnit: 'ns',
  };
}

async function run(options: ScenarioOptions): Promise<ScenarioResult> {
  options.progress('compiling the bundled policies');
  const compile = await benchCompile(options.workDir, options.quick ? 1 : 3);

  options.progress('evaluating rbac/allow: opa-wasm and plain JS');
  const compiled = await compileModules([{ path: 'rbac.rego', text: RBAC_REGO }], { entrypoints: ['rbac/allow'] });
  const policy = await loadPolicy(compiled.wasm, undefined, hostBuiltins);
  policy.setData(RBAC_DATA);
  const inputs = rbacInputs();
  // A fast wrong answer is worth nothing: both must agree on every input before either is timed.
  for (const input of inputs) {
    const got = policy.evaluate(input) as Array<{ result: unknown }>;
    const want = allowJs(RBAC_DATA, input);
    if (got.length !== 1 || got[0]!.result !== want) throw new Error(`rbac: ${JSON.stringify(input)} gave ${JSON.stringify(got)}, expected ${want}`);
  }
  const expected = inputs.map((input) => allowJs(RBAC_DATA, input));
  if (!expected.includes(true) || !expected.includes(false)) throw new Error('rbac inputs must mix allows and denials');

  const timerNs = timerOverheadNs();
  const timing = { durationS: options.durationS, warmupS: options.warmupS };
  const recording = options.profile ? await startCpuProfile() : null;
  const wasm = measure((input) => policy.evaluate(input)[0].result === true, inputs, expected, timing, timerNs);
  const profiles: Record<string, string> = {};
  if (recording) profiles.evaluate = await recording.stop(path.join(options.workDir, 'evaluate.cpuprofile'));
  const js = measure((input) => allowJs(RBAC_DATA, input), inputs, expected, timing, timerNs);

  const series = [microSeries('opa-wasm', false, wasm), microSeries('plain-js', true, js)];
  const [wasmUs, jsUs] = series.map((s) => s.latencyMs.p50 * 1000) as [number, number];
  const round3 = (n: number) => Math.round(n * 1000) / 1000;
  const metrics: Record<string, number> = {
    'evaluate.medianUs': round3(wasmUs),
    'evaluate.p99Us': round3(series[0]!.latencyMs.p99 * 1000),
    'plainJs.medianUs': round3(jsUs),
    'evaluate.ratioToPlainJs': Math.round((wasmUs / Math.max(jsUs, 0.001)) * 10) / 10,
    'compile.runtimeSetupMs': Math.round(compile.setupMs),
    'compile.worstMs': Math.max(...compile.results.map((c) => c.maxMs)),
  };
  for (const c of compile.results) metrics[`compile.${c.policy}.medianMs`] = c.medianMs;
  const how = (t: Timing) => (t.batch === 1 ? 'each call timed on its own' : `timed in batches of ${t.batch} (the clock read costs ${timerNs} ns), so the tail is flattened`);
  return {
    scenario: 'policy',
    description: scenario.description,
    series,
    metrics,
    notes: [
      `Policy rbac/allow over ${inputs.length} inputs (allows and denials), compiled in ${compiled.wasm.byteLength} bytes; opa-wasm ${how(wasm)}; plain JS ${how(js)}.`,
      `Anchor: OPA's own \`opa build -t wasm\` module for the same policy measured ${ANCHOR_NS / 1000} µs median through the same SDK on this machine type (not re-measured here: no OPA binary); this run is ${round3(wasmUs / (ANCHOR_NS / 1000))}× that.`,
      `Compile per bundled policy (${options.quick ? 1 : 3} build${options.quick ? '' : 's'}): ${compile.results.map((c) => `${c.policy} ${c.medianMs} ms (${c.wasmBytes} bytes)`).join(', ')}; runtime setup once per process ${Math.round(compile.setupMs)} ms.`,
    ],
    profiles,
  };
}

export const scenario: Scenario = {
  name: 'policy',
  description: 'Policy evaluation: a compiled RBAC policy through @open-policy-agent/opa-wasm `evaluate` vs the same check as a plain JS function (baseline), per call in-process; and compile time of the bundled policies.',
  run,
};
