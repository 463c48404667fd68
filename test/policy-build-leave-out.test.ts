import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { buildPolicies } from '../policies/compiler/build.ts';
import { CompileErrors } from '../policies/compiler/errors.ts';
import { tempDir } from './helpers/gatehouse.ts';

// buildPolicies with `leaveOutFailing`, as a server starts: the policies that compile are built,
// the others reported with their errors at file:line:col, and none is built without rules it reads.

t.setTimeout(300_000);

const ALPHA = 'package alpha.v1\n\ndefault allow := true\n';
const BETA = 'package beta.v1\n\ndefault allow := false\n\nallow if no_such_function(input.x)\n';
const GAMMA = 'package gamma.v1\n\nallow if {\n';
const DELTA = 'package delta.v1\n\nimport data.beta.v1 as beta\n\ndeny if beta.allow\n\ndefault allow := true\n';

function sources(t: Test, files: Record<string, string>): string {
  const dir = path.join(tempDir(t), 'src');
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

t.test('the policies that compile are built; the others are reported with their errors', async (t) => {
  const src = sources(t, { 'alpha-v1.rego': ALPHA, 'beta-v1.rego': BETA, 'gamma-v1.rego': GAMMA, 'delta-v1.rego': DELTA, 'zeta-v1.rego': ALPHA.replace('alpha', 'zeta') });
  const out = path.join(src, '..', 'out');
  const result = await buildPolicies(src, out, { leaveOutFailing: true });

  t.same(Object.keys(result.policies).sort(), ['alpha-v1', 'zeta-v1'], 'built');
  t.same(Object.keys(JSON.parse(readFileSync(path.join(out, 'manifest.json'), 'utf8')).policies).sort(), ['alpha-v1', 'zeta-v1'], 'the manifest lists them alone');
  t.notOk(
    result.policies['alpha-v1']!.sources.some((file) => file === 'beta-v1.rego' || file === 'gamma-v1.rego'),
    'compiled without the files that do not compile',
  );
  const failed = Object.fromEntries(result.failed.map((f) => [f.policy, { file: f.file, errors: f.errors.map((e) => e.format().split('\n')[0]) }]));
  t.same(Object.keys(failed).sort(), ['beta-v1', 'delta-v1', 'gamma-v1']);
  t.match(failed, {
    'beta-v1': { file: 'beta-v1.rego', errors: [`${path.join(src, 'beta-v1.rego')}:5:10: check error: undefined function no_such_function`] },
    'gamma-v1': { file: 'gamma-v1.rego', errors: [String] },
    'delta-v1': { file: 'delta-v1.rego', errors: [`${path.join(src, 'delta-v1.rego')}:1:1: check error: delta-v1.rego names package beta.v1 of beta-v1.rego, which does not compile`] },
  });
  t.match(failed['gamma-v1']!.errors[0], `${path.join(src, 'gamma-v1.rego')}:`, 'a parse error at its place');
});

t.test('a library that does not compile fails every policy', async (t) => {
  const src = sources(t, { 'alpha-v1.rego': ALPHA, 'zeta-v1.rego': ALPHA.replace('alpha', 'zeta'), 'lib/helpers.rego': 'package lib.helpers\n\nok if {\n' });
  const result = await buildPolicies(src, path.join(src, '..', 'out'), { leaveOutFailing: true });
  t.same(result.policies, {});
  t.same(result.failed.map((f) => f.policy), ['alpha-v1', 'zeta-v1']);
  for (const failure of result.failed) t.match(failure.errors[0]!.location, path.join(src, 'lib/helpers.rego'));
});

t.test('without leaveOutFailing the build is all-or-nothing, as before', async (t) => {
  const src = sources(t, { 'alpha-v1.rego': ALPHA, 'beta-v1.rego': BETA });
  await t.rejects(buildPolicies(src, path.join(src, '..', 'out')), CompileErrors);
  const clean = sources(t, { 'alpha-v1.rego': ALPHA });
  t.same((await buildPolicies(clean, path.join(clean, '..', 'out'), { leaveOutFailing: true })).failed, []);
});
