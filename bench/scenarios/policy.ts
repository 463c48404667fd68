/**
 * Policy evaluation and compilation. How fast a compiled role-based policy evaluates through
 * `@open-policy-agent/opa-wasm` `evaluate`, beside the same check written by hand in JavaScript
 * (the baseline) and a module that does nothing (what the SDK alone costs) in the same process;
 * and how long the compiler takes on each bundled policy.
 */
import binaryen from 'binaryen';
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

/**
 * The least any module can cost through `evaluate`: OPA's ABI with an `opa_eval` that ignores
 * its input and answers a constant result set. The SDK still stringifies and encodes the input,
 * copies it into memory, then finds, decodes and parses the answer, so this is the SDK's own
 * share of an evaluation; the rest is the policy module's.
 */
const SDK_FLOOR_WAT = String.raw`(module
  (import "env" "memory" (memory 2))
  (global (export "opa_wasm_abi_version") i32 (i32.const 1))
  (global (export "opa_wasm_abi_minor_version") i32 (i32.const 3))
  (global $heap (mut i32) (i32.const 4096))
  (data (i32.const 1024) "[{\"result\":true}]\00")
  (data (i32.const 2048) "{}\00")
  (func (export "opa_malloc") (param $size i32) (result i32) (local $at i32)
    (local.set $at (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $size)))
    (local.get $at))
  (func (export "opa_heap_ptr_get") (result i32) (global.get $heap))
  (func (export "opa_heap_ptr_set") (param i32) (global.set $heap (local.get 0)))
  (func (export "opa_json_parse") (param i32 i32) (result i32) (i32.const 1))
  (func (export "opa_json_dump") (param i32) (result i32) (i32.const 2048))
  (func (export "builtins") (result i32) (i32.const 1))
  (func (export "entrypoints") (result i32) (i32.const 1))
  (func (export "opa_eval") (param i32 i32 i32 i32 i32 i32 i32) (result i32)
    (global.set $heap (local.get 5))
    (i32.const 1024)))`;

function sdkFloorModule(): Uint8Array {
  const module = binaryen.parseText(SDK_FLOOR_WAT);
  try {
    return module.emitBinary();
  } finally {
    module.dispose();
  }
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

interface Target<T> {
  fn: (input: T) => boolean;
  /** The answer for each input, in order. */
  expected: boolean[];
}

/** Time each target gets at a stretch while targets take turns. */
const SLICE_NS = 20_000_000n;

/**
 * Times calls of each target over `inputs` in order, `durationS` seconds each, after `warmupS`
 * of untimed calls. The targets take turns in slices of 20 ms, so a change in the host's load
 * (a shared machine's speed drifts by 2× over minutes) falls on all of them alike and their
 * ratio stays meaningful. Each call is timed on its own unless the clock read costs more than a
 * tenth of a call; then batches are timed (long enough for the clock to be noise) and every call
 * in a batch is recorded at the batch's average. Batching keeps the median honest and flattens
 * the tail, which the notes say.
 *
 * The answers are counted and checked against `expected`: that keeps the optimiser from
 * discarding a call whose result goes unused, and catches a policy that goes wrong mid-run.
 */
function measure<T>(targets: Target<T>[], inputs: T[], options: { durationS: number; warmupS: number }, overheadNs: number): Timing[] {
  const warmupEnd = performance.now() + options.warmupS * 1000;
  for (let i = 0; performance.now() < warmupEnd; i += 1000) {
    for (const { fn } of targets) for (let j = 0; j < 1000; j++) fn(inputs[(i + j) % inputs.length]!);
  }

  const runs = targets.map(({ fn, expected }) => {
    // The cost of one call, from the fastest of a few short runs: a run that the scheduler
    // interrupted says nothing about the call, and would wrongly make the clock look cheap.
    let perCallNs = Infinity;
    for (let round = 0; round < 5; round++) {
      const pilotStart = process.hrtime.bigint();
      for (let i = 0; i < 2_000; i++) fn(inputs[i % inputs.length]!);
      perCallNs = Math.min(perCallNs, Number(process.hrtime.bigint() - pilotStart) / 2_000);
    }
    const batch = overheadNs > perCallNs / 10 ? Math.max(1, Math.ceil((overheadNs * 100) / Math.max(perCallNs, 1))) : 1;
    return { fn, expected, batch, histogram: createHistogram(), done: 0, allowed: 0, elapsedNs: 0n };
  });

  const durationNs = BigInt(Math.round(options.durationS * 1e9));
  while (runs.some((run) => run.elapsedNs < durationNs)) {
    for (const run of runs) {
      if (run.elapsedNs >= durationNs) continue;
      const { fn, batch, histogram } = run;
      const started = process.hrtime.bigint();
      const end = started + SLICE_NS;
      let timed = 0n;
      // The clock is read right before and after the calls: the histogram's bookkeeping between
      // samples (about 0.2 µs here) is not the call's, and stays out of its time.
      for (let now = started; now < end; ) {
        const start = process.hrtime.bigint();
        for (let j = 0; j < batch; j++) if (fn(inputs[(run.done + j) % inputs.length]!)) run.allowed++;
        now = process.hrtime.bigint();
        timed += now - start;
        histogram.recordValueWithCount(Math.max(1, Math.round(Number(now - start) / batch)), batch);
        run.done += batch;
      }
      run.elapsedNs += timed;
    }
  }

  return runs.map(({ expected, batch, histogram, done, allowed, elapsedNs }) => {
    let wantAllowed = 0;
    for (let i = 0; i < done; i++) if (expected[i % expected.length]) wantAllowed++;
    if (allowed !== wantAllowed) throw new Error(`measured calls allowed ${allowed} times, expected ${wantAllowed}`);
    return { batch, calls: done, elapsedS: Number(elapsedNs) / 1e9, latencyMs: summarise(histogram, 'ns'), histogram: encodeHistogram(histogram) };
  });
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

  options.progress('evaluating rbac/allow: opa-wasm, the SDK floor and plain JS');
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
  const floorPolicy = await loadPolicy(sdkFloorModule());
  // Timed in turns, so the ratio survives the host's drift; the profile holds both.
  const [wasm, floor] = measure(
    [
      { fn: (input) => policy.evaluate(input)[0].result === true, expected },
      { fn: (input) => floorPolicy.evaluate(input)[0].result === true, expected: inputs.map(() => true) },
    ],
    inputs,
    timing,
    timerNs,
  ) as [Timing, Timing];
  const profiles: Record<string, string> = {};
  if (recording) profiles.evaluate = await recording.stop(path.join(options.workDir, 'evaluate.cpuprofile'));
  const [js] = measure([{ fn: (input) => allowJs(RBAC_DATA, input), expected }], inputs, timing, timerNs) as [Timing];

  const series = [microSeries('opa-wasm', false, wasm), microSeries('sdk-floor', true, floor), microSeries('plain-js', true, js)];
  const [wasmUs, floorUs, jsUs] = series.map((s) => s.latencyMs.p50 * 1000) as [number, number, number];
  const round3 = (n: number) => Math.round(n * 1000) / 1000;
  const metrics: Record<string, number> = {
    'evaluate.medianUs': round3(wasmUs),
    'evaluate.p99Us': round3(series[0]!.latencyMs.p99 * 1000),
    'sdkFloor.medianUs': round3(floorUs),
    'evaluate.ratioToSdkFloor': Math.round((wasmUs / floorUs) * 100) / 100,
    'evaluate.moduleShareUs': round3(wasmUs - floorUs),
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
      `SDK floor: a module answering a constant through the same \`evaluate\`, timed in 20 ms turns with the policy (${how(floor)}), took ${round3(floorUs)} µs median, the SDK's own share; the policy module adds ${round3(wasmUs - floorUs)} µs (${metrics['evaluate.ratioToSdkFloor']}× the floor).`,
      `Anchor: OPA's own \`opa build -t wasm\` module for the same policy measured ${ANCHOR_NS / 1000} µs median through the same SDK on this machine type (not re-measured here: no OPA binary); this run is ${round3(wasmUs / (ANCHOR_NS / 1000))}× that.`,
      `Compile per bundled policy (${options.quick ? 1 : 3} build${options.quick ? '' : 's'}): ${compile.results.map((c) => `${c.policy} ${c.medianMs} ms (${c.wasmBytes} bytes)`).join(', ')}; runtime setup once per process ${Math.round(compile.setupMs)} ms.`,
    ],
    profiles,
  };
}

export const scenario: Scenario = {
  name: 'policy',
  description: 'Policy evaluation: a compiled RBAC policy through @open-policy-agent/opa-wasm `evaluate` vs the same check as a plain JS function and a module that does nothing through the same SDK call (baselines), per call in-process; and compile time of the bundled policies.',
  run,
};
