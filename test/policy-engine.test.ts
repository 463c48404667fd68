import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t, { type Test } from 'tap';
import { PolicyEngine, UnknownPolicyError, type EngineLog, type ReloadOutcome } from '../policies/engine/index.ts';
import { checkProgram } from '../policies/compiler/check/program.ts';
import { emitModule } from '../policies/compiler/emit/wasm.ts';
import { parseModule } from '../policies/compiler/parse/index.ts';
import { planProgram } from '../policies/compiler/plan/planner.ts';
import { ensureRuntime } from '../policies/runtime/build.ts';
import { writeBundle } from './fixtures/bundle.ts';
import { capturingLog } from './helpers/engine-log.ts';
import { FIXTURE_ENTRYPOINTS, opaAbiFixture } from './fixtures/opa-abi-module.ts';

// The Rego tests compile real modules (and, on a fresh checkout, the runtime first).
t.setTimeout(300_000);

const sha256 = (bytes: Uint8Array): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

function nextReload(engine: PolicyEngine): Promise<ReloadOutcome> {
  return new Promise((resolve) => engine.once('reload', resolve));
}

async function bundleDir(t: Test, files: Record<string, Uint8Array | string> = {}): Promise<string> {
  const dir = t.testdir();
  await writeBundle(path.join(dir, 'fixture-v1.tar.gz'), { 'policy.wasm': opaAbiFixture(), ...files });
  return dir;
}

t.test('bundles from opa build -t wasm', async (t) => {
  const wasm = opaAbiFixture();
  const buildDir = await bundleDir(t, {
    'data.json': JSON.stringify({ limits: { max: 5 } }),
    'routes/data.json': JSON.stringify({ public: ['/health'] }),
  });
  const engine = await PolicyEngine.open({ buildDir });
  t.teardown(() => engine.close());

  t.same(engine.names(), ['fixture-v1']);
  t.ok(engine.has('fixture-v1'));
  t.same(engine.info('fixture-v1'), {
    name: 'fixture-v1',
    moduleHash: sha256(wasm),
    entrypoints: FIXTURE_ENTRYPOINTS,
    origin: 'bundle',
    sources: ['fixture-v1.tar.gz'],
    modules: [],
  }, 'a bundle without Rego files carries no text');

  const data = engine.evaluate('fixture-v1', {});
  t.same(data.value, { limits: { max: 5 }, routes: { public: ['/health'] } }, 'data documents merged at their paths');
  t.equal(data.policy, 'fixture-v1');
  t.equal(data.moduleHash, sha256(wasm));
  t.equal(data.error, undefined);
  t.type(data.durationNs, 'number');

  t.same(engine.evaluate('fixture-v1', { a: [1, 'x'] }, 'fixture/input').value, { a: [1, 'x'] }, 'entrypoint by name');
  t.same(engine.evaluate('fixture-v1', { a: 1 }, 1).value, { a: 1 }, 'entrypoint by id');
  t.equal(engine.evaluate('fixture-v1', false, 1).value, false, 'falsy inputs are inputs');
  t.equal(engine.evaluate('fixture-v1', undefined, 1).value, undefined, 'no input, no value');
  t.equal(engine.evaluate('fixture-v1', 'gâte', 'fixture/sha256').value, createHash('sha256').update('gâte').digest('hex'), 'host builtins are wired in');
  t.same(engine.evaluateJson('fixture-v1', '{"b":[true,"é"],"a":null}', 'fixture/input').value, { a: null, b: [true, 'é'] }, 'an input given as JSON text');
  t.equal(engine.evaluateJson('fixture-v1', '0', 1).value, 0, 'falsy JSON texts are inputs');
  t.equal(engine.evaluateJson('fixture-v1', '{"a":', 1).value, undefined, 'a text that is not JSON is no input');
  t.match(engine.evaluateJson('fixture-v1', '{}', 'fixture/nope').error, /no entrypoint fixture\/nope/, 'entrypoints are checked alike');

  const missing = engine.evaluate('fixture-v1', {}, 'fixture/nope');
  t.equal(missing.value, undefined);
  t.match(missing.error, /no entrypoint fixture\/nope/);
});

t.test('unknown policies throw a typed error', async (t) => {
  const engine = await PolicyEngine.open({ buildDir: await bundleDir(t) });
  t.teardown(() => engine.close());
  t.notOk(engine.has('nope-v1'));
  t.throws(() => engine.evaluate('nope-v1', {}), UnknownPolicyError);
  t.throws(() => engine.info('nope-v1'), UnknownPolicyError);
  t.throws(() => engine.setData('nope-v1', {}), UnknownPolicyError);
  try {
    engine.evaluate('nope-v1', {});
  } catch (err) {
    t.equal((err as UnknownPolicyError).policy, 'nope-v1');
  }
});

t.test('traps, aborts and memory exhaustion fail closed and the policy keeps working', async (t) => {
  const engine = await PolicyEngine.open({ buildDir: await bundleDir(t), maxMemoryPages: 32 });
  t.teardown(() => engine.close());

  const trap = engine.evaluate('fixture-v1', {}, 'fixture/trap');
  t.equal(trap.value, undefined);
  t.match(trap.error, /trapped: unreachable/);

  const abort = engine.evaluate('fixture-v1', {}, 'fixture/abort');
  t.equal(abort.value, undefined);
  t.match(abort.error, /aborted: fixture aborted on purpose/);

  const grow = engine.evaluate('fixture-v1', {}, 'fixture/grow');
  t.equal(grow.value, undefined);
  t.ok(grow.error, 'runaway allocation stops at the memory cap');

  const huge = engine.evaluate('fixture-v1', { blob: 'x'.repeat(4 * 1024 * 1024) }, 'fixture/input');
  t.equal(huge.value, undefined);
  t.equal(huge.error, 'policy exceeded its memory budget of 2 MiB');

  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const unencodable = engine.evaluate('fixture-v1', cyclic, 'fixture/input');
  t.equal(unencodable.value, undefined);
  t.match(unencodable.error, /circular/);

  t.same(engine.evaluate('fixture-v1', { ok: true }, 'fixture/input').value, { ok: true }, 'a fresh instance serves next');
});

t.test('setData replaces a policy data document', async (t) => {
  const engine = await PolicyEngine.open({ buildDir: await bundleDir(t, { 'data.json': '{"a":1}' }) });
  t.teardown(() => engine.close());
  t.same(engine.evaluate('fixture-v1', {}).value, { a: 1 });
  engine.setData('fixture-v1', { b: 2 });
  t.same(engine.evaluate('fixture-v1', {}).value, { b: 2 });
  engine.evaluate('fixture-v1', {}, 'fixture/trap');
  t.same(engine.evaluate('fixture-v1', {}).value, { b: 2 }, 'kept when the instance is replaced');
});

t.test('a malformed bundle is left out with its reason, and the others load', async (t) => {
  const buildDir = await bundleDir(t);
  await writeFile(path.join(buildDir, 'broken-v1.tar.gz'), 'not an archive');
  await writeBundle(path.join(buildDir, 'empty-v1.tar.gz'), { 'data.json': '{}' });
  const log = capturingLog();
  const engine = await PolicyEngine.open({ buildDir, log });
  t.teardown(() => engine.close());

  t.same(engine.names(), ['fixture-v1']);
  t.same(engine.evaluate('fixture-v1', { a: 1 }, 'fixture/input').value, { a: 1 }, 'the good bundle serves');
  t.throws(() => engine.evaluate('empty-v1', {}), UnknownPolicyError);
  const failures = engine.loadFailures();
  t.same([...failures.keys()], [path.join(buildDir, 'broken-v1.tar.gz'), path.join(buildDir, 'empty-v1.tar.gz')]);
  t.match(failures.get(path.join(buildDir, 'broken-v1.tar.gz')), /^not a gzipped tar archive \(.+\)$/);
  t.match(failures.get(path.join(buildDir, 'empty-v1.tar.gz')), /^no \/policy\.wasm in the bundle/);
  t.match(log.errors, [
    { message: 'policy not loaded', fields: { file: path.join(buildDir, 'broken-v1.tar.gz'), reason: 'not a gzipped tar archive' } },
    { message: 'policy not loaded', fields: { file: path.join(buildDir, 'empty-v1.tar.gz'), reason: 'no /policy.wasm in the bundle' } },
  ]);
});

t.test('an empty or missing build directory loads no policies', async (t) => {
  const engine = await PolicyEngine.open({ buildDir: path.join(t.testdir(), 'missing') });
  t.same(engine.names(), []);
  await engine.close();
});

t.test('a module that aborts while loading is left out, with a reason, and the others load', async (t) => {
  // What the compiler built for a float literal beyond the float range before refusing it: a
  // constant the runtime cannot parse, so the module aborts (with a bare string) when instantiated.
  const policy = planProgram(checkProgram([parseModule('huge.rego', 'package huge\n\nlimit := 1.5e300\n')]), ['huge/limit']);
  t.ok(policy.consts.includes('1.5e300'), 'the literal is a constant');
  const consts = policy.consts.map((c) => (c === '1.5e300' ? '2e308' : c));
  const buildDir = await bundleDir(t);
  const bundle = path.join(buildDir, 'huge-v1.tar.gz');
  await writeBundle(bundle, { 'policy.wasm': emitModule({ ...policy, consts }, await ensureRuntime()) });

  const log = capturingLog();
  const engine = await PolicyEngine.open({ buildDir, log });
  t.teardown(() => engine.close());
  t.same(engine.names(), ['fixture-v1'], 'the other policy loads');
  t.same(engine.evaluate('fixture-v1', { a: 1 }, 'fixture/input').value, { a: 1 });
  t.throws(() => engine.evaluate('huge-v1', {}), UnknownPolicyError);
  t.same([...engine.loadFailures()], [[bundle, 'policy aborted: invalid constants']], 'the failure has a message');
  t.match(log.errors, [{ message: 'policy not loaded', fields: { file: bundle, reason: 'policy aborted: invalid constants' } }]);
});

// ---- Rego compiled by the project's compiler ------------------------------------------------

const LIBRARY = `package gatehouse.lib.roles

is_admin(principal) if "admin" in principal.roles
`;

const sampleV1 = (limit: string) => `package gatehouse.sample.v1

import data.gatehouse.lib.roles

default allow := false

allow if roles.is_admin(input.principal)

allow if input.amount <= ${limit}

reasons contains "over the limit" if input.amount > ${limit}

is_small(n) if n < 10
`;

const CONFLICT = `package gatehouse.conflict.v1

mode := "a" if input.a

mode := "b" if input.b
`;

async function regoEngine(t: Test, extra: Record<string, string> = {}, opts: { watch?: boolean; log?: EngineLog } = {}) {
  const root = t.testdir({
    src: { 'sample-v1.rego': sampleV1('100'), lib: { 'roles.rego': LIBRARY }, ...extra },
  });
  const sourceDir = path.join(root, 'src');
  const buildDir = path.join(root, 'build');
  const engine = await PolicyEngine.open({ sourceDir, buildDir, debounceMs: 50, ...opts });
  t.teardown(() => engine.close());
  return { engine, sourceDir, buildDir };
}

t.test('Rego policies are built, loaded and evaluated', async (t) => {
  const { engine, buildDir } = await regoEngine(t, { 'conflict-v1.rego': CONFLICT, 'data.json': '{"unused":true}' });
  t.same(engine.names(), ['conflict-v1', 'sample-v1'], 'libraries are not policies');

  const manifest = JSON.parse(await readFile(path.join(buildDir, 'manifest.json'), 'utf8'));
  t.same(engine.info('sample-v1'), {
    name: 'sample-v1',
    moduleHash: manifest.policies['sample-v1'].moduleHash,
    entrypoints: ['gatehouse/sample/v1', 'gatehouse/sample/v1/allow', 'gatehouse/sample/v1/reasons'],
    origin: 'rego',
    sources: manifest.policies['sample-v1'].sources,
    modules: await Promise.all(
      manifest.policies['sample-v1'].sources.map(async (file: string) => ({ path: file, text: await readFile(path.join(buildDir, '.sources', file), 'utf8') })),
    ),
  });
  t.same(engine.info('sample-v1').modules.map((m) => m.path), ['conflict-v1.rego', 'lib/roles.rego', 'sample-v1.rego'], 'with the text of every module compiled');

  const doc = engine.evaluate('sample-v1', { amount: 500, principal: { roles: [] } });
  t.equal(doc.error, undefined);
  t.same(doc.value, { allow: false, reasons: ['over the limit'] }, 'entrypoint 0 is the package document');
  t.equal(engine.evaluate('sample-v1', { amount: 5, principal: { roles: [] } }, 'gatehouse/sample/v1/allow').value, true);
  t.equal(engine.evaluate('sample-v1', { amount: 500, principal: { roles: ['admin'] } }, 1).value, true);
  t.equal(engine.evaluate('sample-v1', { amount: 500, principal: { roles: ['dev'] } }, 1).value, false);

  const conflict = engine.evaluate('conflict-v1', { a: true, b: true }, 'gatehouse/conflict/v1/mode');
  t.equal(conflict.value, undefined, 'a run-time conflict yields no value');
  t.ok(conflict.error, 'and says why');
  t.equal(engine.evaluate('conflict-v1', { a: true }, 'gatehouse/conflict/v1/mode').value, 'a', 'next evaluation is fine');
});

t.test('bundles dropped beside the sources load alongside Rego policies', async (t) => {
  const root = t.testdir({ src: { 'sample-v1.rego': sampleV1('100'), lib: { 'roles.rego': LIBRARY } } });
  await writeBundle(path.join(root, 'src', 'fixture-v1.tar.gz'), { 'policy.wasm': opaAbiFixture() });
  const engine = await PolicyEngine.open({ sourceDir: path.join(root, 'src'), buildDir: path.join(root, 'build') });
  t.teardown(() => engine.close());
  t.same(engine.names(), ['fixture-v1', 'sample-v1']);
  t.equal(engine.info('fixture-v1').origin, 'bundle');
  t.equal(engine.info('sample-v1').origin, 'rego');
});

t.test('hot reload swaps modules atomically and survives a broken edit', async (t) => {
  const log = capturingLog();
  const { engine, sourceDir, buildDir } = await regoEngine(t, {}, { watch: true, log });
  const input = { amount: 150, principal: { roles: [] } };
  const allow = (): unknown => engine.evaluate('sample-v1', input, 'gatehouse/sample/v1/allow').value;
  t.equal(allow(), false);
  const oldHash = engine.info('sample-v1').moduleHash;

  // Evaluate continuously while the reload runs: every answer comes from the old module or the
  // new one, never an error, and once the new one answers the old one never does again.
  const seen: unknown[] = [];
  const poller = setInterval(() => {
    const r = engine.evaluate('sample-v1', input, 'gatehouse/sample/v1/allow');
    seen.push(r.error ?? r.value);
  }, 1);
  const reloaded = nextReload(engine);
  await writeFile(path.join(sourceDir, 'sample-v1.rego'), sampleV1('200'));
  const outcome = await reloaded;
  clearInterval(poller);
  t.match(outcome, { ok: true, policies: ['sample-v1'] });
  t.ok(seen.every((v) => v === false || v === true), 'only old or new answers');
  t.ok(seen.lastIndexOf(false) < Math.max(0, seen.indexOf(true)) || !seen.includes(true), 'no old answer after the swap');
  t.equal(allow(), true, 'the new module serves');
  t.not(engine.info('sample-v1').moduleHash, oldHash);
  t.match(log.infos.at(-1), { message: 'policies reloaded', fields: { policies: ['sample-v1'], durationMs: Number } });

  const goodHash = engine.info('sample-v1').moduleHash;
  const manifestBefore = await readFile(path.join(buildDir, 'manifest.json'), 'utf8');
  const failed = nextReload(engine);
  await writeFile(path.join(sourceDir, 'sample-v1.rego'), 'package gatehouse.sample.v1\n\nallow if {\n');
  const failure = await failed;
  t.equal(failure.ok, false);
  t.match((failure as { error: string }).error, /sample-v1\.rego:\d+:\d+/, 'the error names file:line:col');
  t.match(log.errors.at(-1), { message: /previous policies stay loaded/, fields: { errors: /sample-v1\.rego:\d+:\d+[\s\S]*\^/ } });
  t.equal(allow(), true, 'the last good module still serves');
  t.equal(engine.info('sample-v1').moduleHash, goodHash);
  t.equal(await readFile(path.join(buildDir, 'manifest.json'), 'utf8'), manifestBefore, 'build output untouched');

  const fixed = nextReload(engine);
  await writeFile(path.join(sourceDir, 'sample-v1.rego'), sampleV1('300'));
  t.match(await fixed, { ok: true });
  t.equal(engine.evaluate('sample-v1', { amount: 250, principal: { roles: [] } }, 1).value, true);
});
