import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t, { type Test } from 'tap';
import { gatehouse } from './helpers/cli.ts';

// Each command run compiles real modules in a fresh process; allow for a slow machine.
t.setTimeout(600_000);




const POLICY = `package gatehouse.sample.v1

import data.gatehouse.lib.roles

default allow := false

allow if roles.is_admin(input.principal)

allow if input.amount <= data.sample.limit
`;

const LIBRARY = `package gatehouse.lib.roles

is_admin(principal) if "admin" in principal.roles
`;

const TESTS = `package gatehouse.sample.v1_test

import data.gatehouse.sample.v1 as policy

test_small_amounts_pass if policy.allow with input as {"amount": 5, "principal": {"roles": []}}

test_admins_pass if policy.allow with input as {"amount": 5000, "principal": {"roles": ["admin"]}}

test_large_amounts_fail if not policy.allow with input as {"amount": 5000, "principal": {"roles": []}}
`;

const FAILING_TEST = `package gatehouse.sample.more_test

import data.gatehouse.sample.v1 as policy

test_wrong_expectation if policy.allow with input as {"amount": 5000, "principal": {"roles": []}}
`;

function sources(t: Test, extra: Record<string, string> = {}): string {
  return t.testdir({
    src: {
      'sample-v1.rego': POLICY,
      'sample-v1_test.rego': TESTS,
      'data.json': JSON.stringify({ sample: { limit: 100 } }),
      lib: { 'roles.rego': LIBRARY },
      ...extra,
    },
  });
}

t.test('policies build writes modules and a manifest, and a failed build leaves them as they were', async (t) => {
  const root = sources(t);
  const src = path.join(root, 'src');
  const out = path.join(root, 'out');
  const run = await gatehouse(['policies', 'build', src, '--out', out, '--ir']);
  t.equal(run.code, 0, run.stderr);
  t.match(run.stdout, /^sample-v1\s+[\d.]+ ms\s+[\d.]+ KiB\s+2 entrypoints$/m);
  t.match(run.stdout, /built 1 policy into /);

  t.same((await readdir(out)).sort(), ['.sources', 'data.json', 'manifest.json', 'sample-v1.ir.txt', 'sample-v1.wasm']);
  const before = await readFile(path.join(out, 'manifest.json'), 'utf8');
  const manifest = JSON.parse(before);
  t.match(manifest, {
    version: 1,
    data: 'data.json',
    policies: {
      'sample-v1': {
        module: 'sample-v1.wasm',
        package: 'gatehouse/sample/v1',
        entrypoints: ['gatehouse/sample/v1', 'gatehouse/sample/v1/allow'],
        sourceHash: /^sha256:[0-9a-f]{64}$/,
        moduleHash: /^sha256:[0-9a-f]{64}$/,
        sources: ['lib/roles.rego', 'sample-v1.rego'],
      },
    },
  });
  t.same(Object.keys(manifest.policies), ['sample-v1'], 'libraries and tests are not policies');
  t.ok((await readFile(path.join(out, 'sample-v1.ir.txt'), 'utf8')).length > 0, 'the plan is printed');
  const wasmBefore = await readFile(path.join(out, 'sample-v1.wasm'));

  await writeFile(path.join(src, 'lib', 'broken.rego'), 'package gatehouse.lib.broken\n\nx := [1, 2\n');
  await writeFile(path.join(src, 'other-v1.rego'), 'package gatehouse.other.v1\n\nallow if {\n  input.x ==\n}\n');
  const failed = await gatehouse(['policies', 'build', src, '--out', out]);
  t.equal(failed.code, 1);
  t.match(failed.stderr, /lib[/\\]broken\.rego:\d+:\d+: parse error: .+\n {2}.*\n {2}\s*\^/, 'file:line:col, the line and a caret');
  t.match(failed.stderr, /other-v1\.rego:\d+:\d+: parse error: /, 'errors of every file are reported');
  t.match(failed.stderr, /2 compile errors/);
  t.equal(await readFile(path.join(out, 'manifest.json'), 'utf8'), before, 'manifest untouched');
  t.same(await readFile(path.join(out, 'sample-v1.wasm')), wasmBefore, 'module untouched');
  t.same((await readdir(root)).sort(), ['out', 'src'], 'no temporary directories left behind');
});

t.test('policies test reports passes and failures like opa test', async (t) => {
  const root = sources(t);
  const src = path.join(root, 'src');

  const pass = await gatehouse(['policies', 'test', src, '--verbose']);
  t.equal(pass.code, 0, pass.stderr);
  t.match(pass.stdout, /^PASS data\.gatehouse\.sample\.v1_test\.test_small_amounts_pass \([\d.]+(ms|µs)\)$/m);
  t.match(pass.stdout, /^3 passed, 0 failed$/m);

  await writeFile(path.join(src, 'more_test.rego'), FAILING_TEST);
  const fail = await gatehouse(['policies', 'test', src]);
  t.equal(fail.code, 1);
  t.match(fail.stdout, /^FAIL data\.gatehouse\.sample\.more_test\.test_wrong_expectation \(.+\): undefined$/m);
  t.match(fail.stdout, /^3 passed, 1 failed$/m);
  t.notMatch(fail.stdout, /PASS/, 'passes are listed only with --verbose');

  const selected = await gatehouse(['policies', 'test', src, '-r', 'v1_test\\.test_(small|admins)', '-v']);
  t.equal(selected.code, 0, 'the failing test is not run');
  t.match(selected.stdout, /^2 passed, 0 failed$/m);
  t.notMatch(selected.stdout, /test_large_amounts_fail/);
});

t.test('policies eval answers a query like opa eval, on the compiled Wasm', async (t) => {
  const root = sources(t);
  const src = path.join(root, 'src');
  const input = path.join(root, 'input.json');
  await writeFile(input, JSON.stringify({ amount: 5, principal: { roles: [] } }));

  const doc = await gatehouse(['policies', 'eval', 'data.gatehouse.sample.v1.allow', '-d', src, '-i', input]);
  t.equal(doc.code, 0, doc.stderr);
  t.same(JSON.parse(doc.stdout), {
    result: [{ expressions: [{ value: true, text: 'data.gatehouse.sample.v1.allow', location: { row: 1, col: 1 } }] }],
  });

  const denied = await gatehouse(['policies', 'eval', 'data.gatehouse.sample.v1.allow', '-d', src, '--format', 'pretty']);
  t.equal(denied.stdout.trim(), 'false', 'a false term is reported, as OPA captures it');

  const failing = await gatehouse(['policies', 'eval', 'data.sample.limit > 1000', '-d', src]);
  t.same(JSON.parse(failing.stdout), {}, 'a comparison that fails leaves no result');

  const bound = await gatehouse(['policies', 'eval', 'some r in ["a", "b"]; n := count(r) + data.sample.limit', '-d', src]);
  t.same(
    JSON.parse(bound.stdout).result.map((r: { bindings: unknown }) => r.bindings),
    [{ n: 101, r: 'a' }, { n: 101, r: 'b' }],
    'one result per solution, with the bindings',
  );

  const bad = await gatehouse(['policies', 'eval', 'count(', '-d', src]);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /^<query>:1:7: parse error: .+\n {2}count\(\n {8}\^/m, 'the error points into the query');
});

t.test('policies check reports parse and safety errors; fmt prints, checks and rewrites canonically', async (t) => {
  const root = t.testdir({
    'messy.rego': 'package gatehouse.messy\nimport rego.v1\nallow if {   input.a==1 # why\n# alone\n  input.b  }\n\n\nlimits := {"a": [1,2],\n"b": 3}\n',
    'unsafe.rego': 'package gatehouse.unsafe\n\nallow if y\n',
    'broken.rego': 'package gatehouse.broken\n\nallow if {\n',
  });
  const messy = path.join(root, 'messy.rego');
  const canonical = 'package gatehouse.messy\n\nimport rego.v1\n\nallow if {\n\tinput.a == 1 # why\n\t# alone\n\tinput.b\n}\n\nlimits := {\n\t"a": [1, 2],\n\t"b": 3,\n}\n';

  t.equal((await gatehouse(['policies', 'check', messy])).code, 0);
  const failing = await gatehouse(['policies', 'check', root]);
  t.equal(failing.code, 1);
  t.match(failing.stderr, /broken\.rego:\d+:\d+: parse error: /, 'every file is checked');
  const unsafe = await gatehouse(['policies', 'check', path.join(root, 'unsafe.rego')]);
  t.match(unsafe.stderr, /unsafe\.rego:3:10: check error: var y is unsafe\n {2}allow if y\n {11}\^/);

  const printed = await gatehouse(['policies', 'fmt', messy]);
  t.equal(printed.stdout, canonical);
  const checked = await gatehouse(['policies', 'fmt', '--check', messy]);
  t.equal(checked.code, 1, '--check fails on a file that is not formatted');
  t.equal(checked.stdout.trim(), messy);
  t.not(await readFile(messy, 'utf8'), canonical, '--check writes nothing');
  t.equal((await gatehouse(['policies', 'fmt', '-w', messy])).code, 0);
  t.equal(await readFile(messy, 'utf8'), canonical, '-w rewrites the file');
  t.equal((await gatehouse(['policies', 'fmt', '--check', messy])).code, 0, 'formatted output is stable');
});

t.test('usage errors exit 2', async (t) => {
  const root = sources(t);
  for (const args of [
    ['policies'],
    ['policies', 'frobnicate'],
    ['policies', 'build', path.join(root, 'src')],
    ['policies', 'build', '--out', path.join(root, 'out')],
    ['policies', 'test', path.join(root, 'src'), '--bogus'],
    ['policies', 'eval'],
    ['policies', 'test', path.join(root, 'src'), '-r', '('],
    ['policies', 'eval', 'true', '--format', 'yaml'],
  ]) {
    const run = await gatehouse(args);
    t.equal(run.code, 2, args.join(' '));
    t.match(run.stderr, /usage: gatehouse policies/);
  }
});

t.test('every subcommand answers --help with its usage', async (t) => {
  for (const command of ['build', 'test', 'eval', 'check', 'fmt', 'runtime']) {
    const run = await gatehouse(['policies', command, '--help']);
    t.equal(run.code, 0, command);
    t.match(run.stdout, new RegExp(`^usage: gatehouse policies ${command}`), command);
  }
});
