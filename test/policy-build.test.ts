import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { buildPolicies, policyNameOf } from '../policies/compiler/build.ts';
import { CompileErrors } from '../policies/compiler/errors.ts';
import { formatTestReport, runPolicyTests } from '../policies/compiler/test-runner.ts';
import { loadRegistry } from '../policies/engine/registry.ts';
import { readSources } from '../policies/compiler/source-tree.ts';

// These compile real modules (and, on a fresh checkout, the runtime first).
t.setTimeout(300_000);

const LIBRARY = `package gatehouse.lib.util

double(x) := x * 2
`;

const ALPHA = `package gatehouse.alpha.v1

import data.gatehouse.lib.util

default allow := false

allow if util.double(input.n) > 10

reasons contains "small" if not allow

limits[k] := v if some k, v in data.limits

helper(x) if x > 1
`;

const BETA = `package gatehouse.beta.v2

ok := true
`;

t.test('policy names come from <name>-v<N>.rego', async (t) => {
  t.equal(policyNameOf('spend-approval-v2.rego'), 'spend-approval-v2');
  t.equal(policyNameOf('dir/route-access-v10.rego'), 'route-access-v10');
  t.equal(policyNameOf('lib/decisions.rego'), undefined);
  t.equal(policyNameOf('spend-approval-v2_test.rego'), undefined);
  t.equal(policyNameOf('v2.rego'), undefined);
});

t.test('buildPolicies compiles each policy with every library', async (t) => {
  const root = t.testdir({
    src: {
      'alpha-v1.rego': ALPHA,
      nested: { 'beta-v2.rego': BETA },
      lib: { 'util.rego': LIBRARY },
      'alpha-v1_test.rego': 'package gatehouse.alpha.v1_test\n\ntest_x if true\n',
      'data.json': '{"limits": {"a": 1}}',
      build: { 'stale-v1.rego': 'package stale.v1\n\nx := 1\n' },
    },
  });
  const out = path.join(root, 'src', 'build');
  const result = await buildPolicies(path.join(root, 'src'), out);

  t.same(Object.keys(result.policies).sort(), ['alpha-v1', 'beta-v2'], 'an output directory inside the sources is not read');
  t.same(result.policies['alpha-v1']!.entrypoints, [
    'gatehouse/alpha/v1',
    'gatehouse/alpha/v1/allow',
    'gatehouse/alpha/v1/reasons',
    'gatehouse/alpha/v1/limits',
  ], 'the package document, then every rule that is not a function');
  t.same(result.policies['beta-v2']!.sources, ['alpha-v1.rego', 'lib/util.rego', 'nested/beta-v2.rego']);
  t.equal(result.data, 'data.json');
  for (const name of ['alpha-v1', 'beta-v2']) {
    t.ok(result.compiled[name]!.compileMs > 0, `${name} compile time`);
    t.ok(result.compiled[name]!.moduleBytes > 0, `${name} module size`);
    t.match(result.compiled[name]!.ir, /\S/, `${name} plan`);
  }
  t.same((await readdir(out)).sort(), ['.sources', 'alpha-v1.wasm', 'beta-v2.wasm', 'data.json', 'manifest.json']);
  const manifest = JSON.parse(await readFile(path.join(out, 'manifest.json'), 'utf8'));
  t.notOk('compiled' in manifest, 'measurements stay out of the manifest');
  t.same(manifest.policies, result.policies);

  const texts = { 'alpha-v1.rego': ALPHA, 'lib/util.rego': LIBRARY, 'nested/beta-v2.rego': BETA };
  for (const [file, text] of Object.entries(texts)) t.equal(await readFile(path.join(out, '.sources', file), 'utf8'), text, `.sources/${file} keeps the text compiled`);
  t.same((await readdir(path.join(out, '.sources'))).sort(), ['alpha-v1.rego', 'lib', 'nested'], 'tests are not among the sources kept');
  t.same(
    (await readSources([path.join(root, 'src')])).modules.map((m) => m.relative),
    ['alpha-v1.rego', 'lib/util.rego', 'nested/beta-v2.rego'],
    'the kept copies are never read as sources, even without the build directory excluded',
  );

  await writeFile(path.join(root, 'src', 'nested', 'beta-v2.rego'), 'package gatehouse.beta.v2\n\nok := false\n');
  const { registry } = await loadRegistry(out);
  t.same(registry.get('beta-v2')!.info.modules, Object.entries(texts).map(([p, text]) => ({ path: p, text })), 'the loaded policy carries the text it was compiled from, not what the file holds now');
  await rm(path.join(out, '.sources'), { recursive: true });
  t.same((await loadRegistry(out)).registry.get('beta-v2')!.info.modules, [], 'a build without kept sources loads, with no text');
});

t.test('every compile error is reported once, and nothing is written', async (t) => {
  const root = t.testdir({
    src: {
      'alpha-v1.rego': 'package gatehouse.alpha.v1\n\nimport data.gatehouse.lib.broken\n\nallow := broken.bad(1)\n',
      'beta-v2.rego': 'package gatehouse.beta.v2\n\nimport data.gatehouse.lib.broken\n\nok := broken.bad(2)\n',
      lib: { 'broken.rego': 'package gatehouse.lib.broken\n\nbad(x) := undefined_fn(x)\n' },
    },
  });
  const out = path.join(root, 'out');
  const err = await buildPolicies(path.join(root, 'src'), out).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.type(err, CompileErrors);
  const errors = (err as CompileErrors).errors;
  t.equal(errors.length, 1, 'a library error is not repeated per policy');
  t.match(errors[0]!.format(), /broken\.rego:3:11: \w+ error: undefined function undefined_fn/);
  t.same((await readdir(root)).sort(), ['src'], 'no output and no temporary directory');
});

t.test('invalid data.json and clashing names fail the build', async (t) => {
  const badData = t.testdir({ 'beta-v2.rego': BETA, 'data.json': '{"a": ' });
  await t.rejects(buildPolicies(badData, path.join(badData, '..', 'out-data')), /data\.json: not valid JSON/);

  const twice = t.testdir({ 'beta-v2.rego': BETA, other: { 'beta-v2.rego': BETA } });
  await t.rejects(buildPolicies(twice, path.join(twice, '..', 'out-twice')), CompileErrors);
});

t.test('runPolicyTests reports passes, failures and errors', async (t) => {
  const dir = t.testdir({
    'alpha-v1.rego': ALPHA,
    lib: { 'util.rego': LIBRARY },
    'data.json': '{"limits": {"a": 1}}',
    'conflict-v1.rego': 'package gatehouse.conflict.v1\n\nmode := "a" if input.a\n\nmode := "b" if input.b\n',
    'alpha-v1_test.rego': `package gatehouse.alpha.v1_test

import data.gatehouse.alpha.v1 as alpha

test_big_is_allowed if alpha.allow with input as {"n": 6}

test_small_is_denied if not alpha.allow with input as {"n": 5}

test_data_is_loaded if alpha.limits == {"a": 1}

test_wrong if alpha.allow with input as {"n": 1}

test_conflict if data.gatehouse.conflict.v1.mode with input as {"a": true, "b": true}

helper_not_a_test := true
`,
  });
  const report = await runPolicyTests(dir);
  t.equal(report.passed, 3);
  t.equal(report.failed, 1);
  t.equal(report.errored, 1);
  const byRule = Object.fromEntries(report.results.map((r) => [r.rule, r]));
  t.same(Object.keys(byRule), ['test_big_is_allowed', 'test_small_is_denied', 'test_data_is_loaded', 'test_wrong', 'test_conflict']);
  t.match(byRule.test_wrong, { status: 'FAIL', package: 'gatehouse.alpha.v1_test' });
  t.match(byRule.test_conflict, { status: 'ERROR', error: /aborted|conflict/ });

  const text = formatTestReport(report);
  t.match(text, /^FAIL data\.gatehouse\.alpha\.v1_test\.test_wrong \(.+\): (undefined|got false)$/m);
  t.match(text, /^ERROR data\.gatehouse\.alpha\.v1_test\.test_conflict/m);
  t.notMatch(text, /^PASS/m);
  t.match(text, /\n3 passed, 2 failed$/);
  t.match(formatTestReport(report, true), /^PASS data\.gatehouse\.alpha\.v1_test\.test_big_is_allowed/m);
});
