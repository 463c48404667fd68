import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { settings } from '../cli/commands/serve.ts';
import { buildPolicies } from '../policies/compiler/build.ts';
import { CompileCache, defaultCompileCacheDir } from '../policies/compiler/compile-cache.ts';
import { PolicyEngine } from '../policies/engine/index.ts';

// These compile real modules (and, on a fresh checkout, the runtime first).
t.setTimeout(300_000);

const GATE = `package gatehouse.gate.v1

default allow := false

allow if input.amount < data.limit

reasons contains "over the limit" if not allow
`;

const OTHER = `package gatehouse.other.v1

level := count(input.tags)
`;

function sources() {
  return { src: { 'gate-v1.rego': GATE, 'other-v1.rego': OTHER, 'data.json': '{"limit": 100}' } };
}

async function build(root: string, cache: CompileCache, out = 'build') {
  return buildPolicies(path.join(root, 'src'), path.join(root, out), { cache });
}

async function entries(dir: string, ext: string): Promise<string[]> {
  return (await readdir(dir)).filter((f) => f.endsWith(ext)).sort();
}

t.test('an unchanged policy comes from the cache with the same module; a changed one is compiled', async (t) => {
  const root = t.testdir(sources());
  const cache = new CompileCache(path.join(root, 'cache'));

  const first = await build(root, cache, 'first');
  t.same(Object.values(first.compiled).map((s) => s.cached), [false, false], 'nothing cached at first');
  t.equal((await entries(cache.dir, '.wasm')).length, 2, 'each compile is kept');
  t.equal((await stat(cache.dir)).mode & 0o777, 0o700, 'the directory is private');
  for (const file of await readdir(cache.dir)) t.equal((await stat(path.join(cache.dir, file))).mode & 0o777, 0o600, `${file} is private`);

  const second = await build(root, cache, 'second');
  t.same(Object.values(second.compiled).map((s) => s.cached), [true, true], 'both from the cache');
  t.same(second.policies, first.policies, 'the same manifest: module hashes, entrypoints, sources');
  for (const name of ['gate-v1', 'other-v1']) {
    t.same(await readFile(path.join(root, 'second', `${name}.wasm`)), await readFile(path.join(root, 'first', `${name}.wasm`)), `${name}: the same module`);
    t.equal(second.compiled[name]!.ir, first.compiled[name]!.ir, `${name}: the same plan`);
    t.same(second.compiled[name]!.hostBuiltins, first.compiled[name]!.hostBuiltins, `${name}: the same host builtins`);
  }

  await writeFile(path.join(root, 'src', 'gate-v1.rego'), GATE.replace('<', '<='));
  const changed = await build(root, cache, 'third');
  // Every policy is compiled with every module, so a change to one file is a change to both.
  t.same(Object.values(changed.compiled).map((s) => s.cached), [false, false], 'a changed source is compiled again');
  t.not(changed.policies['gate-v1']!.moduleHash, first.policies['gate-v1']!.moduleHash, 'into a different module');
});

t.test('a cached policy decides as the compiled one does', async (t) => {
  const root = t.testdir(sources());
  const cache = new CompileCache(path.join(root, 'cache'));
  const open = async (dir: string) => {
    const engine = await PolicyEngine.open({ sourceDir: path.join(root, 'src'), buildDir: path.join(root, dir), compileCache: cache });
    t.teardown(() => engine.close());
    return engine;
  };
  const compiled = await open('a');
  const cached = await open('b');
  for (const amount of [5, 100, 500]) {
    const want = compiled.evaluate('gate-v1', { amount });
    const got = cached.evaluate('gate-v1', { amount });
    t.same(got.value, want.value, `amount ${amount}`);
    t.equal(got.moduleHash, want.moduleHash);
  }
  t.match(cached.evaluate('gate-v1', { amount: 500 }).value, { allow: false, reasons: ['over the limit'] }, 'and decides as written');
});

t.test('an altered or unreadable entry is compiled again and written anew', async (t) => {
  const root = t.testdir(sources());
  const cache = new CompileCache(path.join(root, 'cache'));
  const first = await build(root, cache, 'first');
  // One entry's module altered, the other's header made unreadable.
  const [wasm] = await entries(cache.dir, '.wasm');
  const file = path.join(cache.dir, wasm!);
  const bytes = await readFile(file);
  bytes[bytes.length - 1] ^= 0xff;
  await writeFile(file, bytes);
  const [, header] = await entries(cache.dir, '.json');
  await writeFile(path.join(cache.dir, header!), '{not json');

  const second = await build(root, cache, 'second');
  t.same(Object.values(second.compiled).map((s) => s.cached).sort(), [false, false], 'the altered entry and the unreadable header are compiled again');
  t.same(second.policies, first.policies, 'into the modules a compile makes');
  const third = await build(root, cache, 'third');
  t.same(Object.values(third.compiled).map((s) => s.cached), [true, true], 'and the entries were written anew');
});

t.test('a cache that cannot be written costs a compile, never the build', async (t) => {
  const root = t.testdir({ ...sources(), blocked: 'a file where the cache directory would be' });
  const cache = new CompileCache(path.join(root, 'blocked', 'policies'));
  const result = await build(root, cache);
  t.same(Object.keys(result.policies).sort(), ['gate-v1', 'other-v1'], 'the build succeeds');
  t.same(Object.values(result.compiled).map((s) => s.cached), [false, false]);

});

t.test('gatehouse serve: --policy-cache, GATEHOUSE_POLICY_CACHE, and off', async (t) => {
  const cacheDir = (args: string[], env: NodeJS.ProcessEnv) => {
    const parsed = settings(args, env);
    return parsed === 'help' ? 'help' : parsed.policyCacheDir;
  };
  t.equal(cacheDir([], {}), defaultCompileCacheDir({}), 'the user cache directory by default');
  t.equal(defaultCompileCacheDir({ XDG_CACHE_HOME: '/var/cache/x' }), '/var/cache/x/gatehouse/policies', 'XDG_CACHE_HOME is honoured');
  t.equal(cacheDir(['--policy-cache', '/srv/cache'], {}), '/srv/cache');
  t.equal(cacheDir([], { GATEHOUSE_POLICY_CACHE: '/srv/env-cache' }), '/srv/env-cache');
  t.equal(cacheDir(['--policy-cache', 'off'], {}), undefined, 'off compiles at every start');
  t.equal(cacheDir([], { GATEHOUSE_POLICY_CACHE: 'off' }), undefined);
});
