/**
 * The OPA-style policy tooling beyond the basics: `policies build` over any files and
 * directories with `-e` entrypoints and a clear refusal when there is no policy; `policies test`
 * showing where a failing test failed and what it got, `--explain fails|full`, and `--coverage`
 * as `opa test --coverage` reports it. Most cases run in-process on the same functions the
 * command calls; a few run the command itself for its output and exit codes.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import t, { type Test } from 'tap';
import { gatehouse } from './helpers/cli.ts';
import { buildPolicies } from '../policies/compiler/build.ts';
import { formatTestReport, runPolicyTests, type PolicyTestReport } from '../policies/compiler/test-runner.ts';
import { readSources } from '../policies/compiler/source-tree.ts';
import { PolicyEngine } from '../policies/engine/index.ts';

t.setTimeout(600_000);



// Line numbers matter: the coverage and failure assertions below name them.
const AUTHZ = `package authz.v1

import data.lib.roles

default allow := false

allow if {
	input.amount < 100
	roles.is_admin(input.user)
}

allow if {
	some r in input.roles
	r == "root"
}

deny contains "too big" if input.amount >= 1000

level := "high" if {
	input.amount > 500
} else := "low"
`;

const ROLES = `package lib.roles

is_admin(u) if u == "root"

is_admin(u) if {
	u == "admin"
}
`;

const TESTS = `package authz.v1_test

import data.authz.v1

test_small_admin if {
	v1.allow with input as {"amount": 5, "user": "admin"}
}

test_count_deny if {
	d := v1.deny with input as {"amount": 5000}
	count(d) == 2
}

test_level if {
	v1.level == "high" with input as {"amount": 10}
}

test_big_not_allowed if {
	not v1.allow with input as {"amount": 500, "user": "admin"}
}

test_wrong if {
	v1.allow with input as {"amount": 500, "user": "bob"}
}
`;

function sources(t: Test): string {
  return t.testdir({ 'authz-v1.rego': AUTHZ, 'authz-v1_test.rego': TESTS, lib: { 'roles.rego': ROLES } });
}

const rows = (ranges: Array<{ start: { row: number }; end: { row: number } }> | undefined): number[][] =>
  (ranges ?? []).map((r) => [r.start.row, r.end.row]);

function byRule(report: PolicyTestReport) {
  return Object.fromEntries(report.results.map((r) => [r.rule, r]));
}

t.test('build: any file name, files and directories together, -e picks the entrypoints', async (t) => {
  const root = t.testdir({
    policy: { 'authz.rego': AUTHZ.replace('package authz.v1', 'package authz') },
    shared: { 'roles.rego': ROLES, 'unused.rego': 'package unused\n\nx := 1\n' },
  });
  const out = path.join(root, 'out');
  const result = await buildPolicies([path.join(root, 'policy'), path.join(root, 'shared', 'roles.rego')], out, {
    entrypoints: ['data.authz.level', 'authz/allow'],
    requirePolicy: true,
  });
  t.same(Object.keys(result.policies), ['authz'], 'the module holding the entrypoints names the policy by its file');
  t.same(result.policies.authz!.entrypoints, ['authz/level', 'authz/allow'], 'in the order given; data. refs become paths');
  t.same(result.policies.authz!.sources, ['policy/authz.rego', 'shared/roles.rego'], 'paths from the directory holding them all; only the files named');

  const engine = await PolicyEngine.open({ buildDir: out });
  t.teardown(() => engine.close());
  t.equal(engine.evaluate('authz', { amount: 900 }).value, 'high', 'entrypoint 0 is the first -e');
  t.equal(engine.evaluate('authz', { amount: 5, user: 'admin' }, 'authz/allow').value, true);

  await t.rejects(
    buildPolicies([path.join(root, 'policy'), path.join(root, 'shared')], out, { entrypoints: ['authz/nothing', 'nowhere'] }),
    {
      errors: [
        { message: 'entrypoint authz/nothing: no package or rule data.authz.nothing in the sources' },
        { message: 'entrypoint nowhere: no package or rule data.nowhere in the sources' },
      ],
    },
    'every entrypoint that names nothing is reported',
  );

  const parent = await buildPolicies([path.join(root, 'shared')], path.join(root, 'out2'), { entrypoints: ['lib'] });
  t.same(Object.keys(parent.policies), ['roles'], 'a parent of packages belongs to the first module below it');
  t.same(parent.policies.roles!.entrypoints, ['lib']);
});

t.test('sources: directories recursively, files by their extension whatever their name', async (t) => {
  const root = t.testdir({
    dir: { 'a-v1.rego': 'package a.v1\n', 'a-v1_test.rego': 'package a.v1_test\n', 'data.json': '{}', '.swap.rego': 'hidden', deep: { 'data.json': '{}' } },
    'limits.json': '{"max": 5}',
    'notes.txt': 'not a source',
  });
  const tree = await readSources([path.join(root, 'dir'), path.join(root, 'dir', 'a-v1.rego')]);
  t.same(tree.modules.map((m) => m.relative), ['a-v1.rego'], 'a file also inside a directory named is read once; hidden files are not sources');
  t.same(tree.tests.map((m) => m.relative), ['a-v1_test.rego']);
  t.equal(tree.dataFile, path.join(root, 'dir', 'data.json'), 'data.json at the top of a directory, not below');
  t.equal((await readSources([path.join(root, 'dir', 'a-v1.rego'), path.join(root, 'limits.json')])).dataFile, path.join(root, 'limits.json'), 'a .json file named is the data document');
  await t.rejects(readSources([path.join(root, 'dir'), path.join(root, 'limits.json')]), { message: /^two data documents: .*dir[/\\]data\.json and .*limits\.json; a build takes one$/ });
  await t.rejects(readSources([path.join(root, 'notes.txt')]), { message: /notes\.txt: not a Rego module \(\.rego\), a data document \(\.json\) or a bundle \(\.tar\.gz\)$/ });
  await t.rejects(readSources([path.join(root, 'missing')]), { message: `${path.join(root, 'missing')}: no such file or directory` });
});

t.test('build: -e within versioned policies, and a clash of names', async (t) => {
  const root = t.testdir({
    'spend-v1.rego': 'package gatehouse.spend.v1\n\nallow if input.ok\n\nlimit := 5\n',
    'spend-v2.rego': 'package gatehouse.spend.v2\n\nallow := true\n',
    a: { 'same.rego': 'package a\n\np := 1\n' },
    b: { 'same.rego': 'package b\n\nq := 2\n' },
  });
  const versioned = await buildPolicies(root, path.join(root, 'out'), { entrypoints: ['gatehouse/spend/v1/limit', 'gatehouse/spend/v1/allow'] });
  t.same(Object.keys(versioned.policies), ['spend-v1'], 'only the policies holding an entrypoint are built');
  t.same(versioned.policies['spend-v1']!.entrypoints, ['gatehouse/spend/v1/limit', 'gatehouse/spend/v1/allow']);

  await t.rejects(
    buildPolicies(root, path.join(root, 'out'), { entrypoints: ['a/p', 'b/q'] }),
    { errors: [{ message: "policy 'same' is defined twice: a/same.rego and b/same.rego" }] },
  );
});

t.test('build: no policy found says why, and leaves the output alone', async (t) => {
  const root = t.testdir({ src: { 'authz.rego': 'package authz\n\nallow := true\n', 'authz_test.rego': 'package authz_test\n' }, empty: {} });
  const out = path.join(root, 'out');
  await t.rejects(buildPolicies(path.join(root, 'src'), out, { requirePolicy: true }), {
    message: `no policy found in ${path.join(root, 'src')}: a policy is a file named <name>-v<N>.rego (authz-v1.rego), and the 1 module found (authz.rego) is a library; rename the policy's file, or pick its entrypoints with -e <package>/<rule>`,
  });
  await t.rejects(buildPolicies(path.join(root, 'empty'), out, { requirePolicy: true }), {
    message: `no policy found in ${path.join(root, 'empty')}: no Rego module (.rego, tests aside) or bundle (.tar.gz) there`,
  });
  t.same((await readdir(root)).sort(), ['empty', 'src'], 'nothing written');
  t.same(Object.keys((await buildPolicies(path.join(root, 'src'), out)).policies), [], 'without requirePolicy, an empty build (a server with no policies yet)');
});

t.test('test: a failing test says where it failed and what it got', async (t) => {
  const report = await runPolicyTests(sources(t));
  t.equal(report.passed, 2);
  t.equal(report.failed, 3);
  const results = byRule(report);
  t.equal(results.test_small_admin!.trace, undefined, 'passing tests are not traced');
  t.match(results.test_count_deny!.trace!.failedAt, { op: 'Fail', probe: { line: 11 }, values: { left: 1, right: 2 } });

  const text = formatTestReport(report);
  const dir = path.dirname(results.test_count_deny!.file);
  const at = (line: number) => `${path.join(dir, 'authz-v1_test.rego')}:${line}`;
  t.match(text, `FAIL data.authz.v1_test.test_count_deny`);
  t.ok(text.includes(`\n  ${at(11)}: count(d) == 2\n    got:      1\n    expected: 2\n`), 'a constant side is what was expected');
  t.ok(text.includes(`\n  ${at(15)}: v1.level == "high" with input as {"amount": 10}\n    got:      "low"\n    expected: "high"\n`));
  t.ok(text.includes(`\n  ${at(23)}: v1.allow with input as {"amount": 500, "user": "bob"}\n    got: false\n`), 'a condition shows its value');
  t.notMatch(text, /Fail |Eval /, 'no trace without --explain');
  t.match(text, /\n2 passed, 3 failed$/);
});

t.test('test --explain fails and full: the trace of a failing test', async (t) => {
  const dir = sources(t);
  const report = await runPolicyTests(dir, { run: /test_wrong/ });
  const policy = `${path.join(dir, 'authz-v1.rego')}`;
  const test = `${path.join(dir, 'authz-v1_test.rego')}`;
  const fails = formatTestReport(report, false, 'fails').split('\n');
  t.same(
    fails.filter((l) => l.startsWith('    ')).map((l) => l.trim()),
    [
      'got: false',
      `Fail ${test}:23 v1.allow with input as {"amount": 500, "user": "bob"}  (got: false)`,
      `Fail ${policy}:8 input.amount < 100  (left: 500, right: 100)`,
      `Fail ${policy}:13 some r in input.roles`,
    ],
    'every expression that failed, in the order evaluated, inside the rules the test reads too',
  );
  const full = formatTestReport(await runPolicyTests(dir, { run: /test_level/ }), false, 'full');
  t.ok(
    full.includes(
      [
        `    Fail ${test}:15 v1.level == "high" with input as {"amount": 10}  (got: "low", expected: "high")`,
        `    Fail ${policy}:20 input.amount > 500  (left: 10, right: 500)`,
        `    Exit ${policy}:21 data.authz.v1.level`,
      ].join('\n'),
    ),
    'the failures, and the else clause that gave the value',
  );
  const passingFull = formatTestReport(await runPolicyTests(dir, { run: /test_count_deny/ }), false, 'full');
  t.match(passingFull, `    Eval ${policy}:17 input.amount >= 1000`, 'full shows what held (Eval)');
  t.match(passingFull, `    Exit ${policy}:17 data.authz.v1.deny`, 'and the rules that produced a value (Exit)');
});

t.test('test --coverage: the lines the tests evaluated, as opa test --coverage reports them', async (t) => {
  const dir = sources(t);
  const report = await runPolicyTests(dir, { coverage: true });
  t.equal(report.passed + report.failed, 5, 'the tests run on the traced build');
  t.equal(report.failed, 3, 'with the same outcomes');
  const coverage = report.coverage!;
  t.same(Object.keys(coverage.files), [path.join(dir, 'authz-v1.rego'), path.join(dir, 'authz-v1_test.rego'), path.join(dir, 'lib', 'roles.rego')]);
  const policy = coverage.files[path.join(dir, 'authz-v1.rego')]!;
  // 5: the default applied; 7-9: the first allow held; 12: the second allow never did, though
  // 13 was evaluated (input.roles was missing) and 14 never was; 17: evaluated; 19: level was
  // never "high", 20 was evaluated and the else on 21 gave the value. Line 3, the import, is
  // neither.
  t.same(rows(policy.covered), [[5, 5], [7, 9], [13, 13], [17, 17], [20, 21]]);
  t.same(rows(policy.not_covered), [[12, 12], [14, 14], [19, 19]]);
  t.equal(policy.coverage, (100 * 8) / 11, '8 of 11 lines, not rounded (OPA stopped rounding: a rounded 99.996 passed --threshold 100)');
  const tests = coverage.files[path.join(dir, 'authz-v1_test.rego')]!;
  t.same(rows(tests.not_covered), [[9, 9], [14, 14], [22, 22]], 'the heads of the failing tests');
  t.same(coverage.files[path.join(dir, 'lib', 'roles.rego')], { covered: [{ start: { row: 3 }, end: { row: 3 } }, { start: { row: 5 }, end: { row: 6 } }], coverage: 100 });
  t.equal(coverage.coverage, 76, '19 of 25 lines');

  const none = await runPolicyTests(dir, { coverage: true, run: /no such test/ });
  t.same(rows(none.coverage!.files[path.join(dir, 'lib', 'roles.rego')]!.not_covered), [[3, 3], [5, 6]], 'no test run: nothing covered');
  t.equal(none.coverage!.coverage, 0);
});

t.test('the commands: output and exit codes', async (t) => {
  const dir = sources(t);
  const out = path.join(dir, 'out');

  const built = await gatehouse(['policies', 'build', path.join(dir, 'authz-v1.rego'), path.join(dir, 'lib'), '-e', 'authz/v1/allow', '--out', out]);
  t.equal(built.code, 0, built.stderr);
  t.match(built.stdout, /^authz-v1 +[\d.]+ ms +[\d.]+ KiB +1 entrypoint\n/);
  t.same(JSON.parse(await readFile(path.join(out, 'manifest.json'), 'utf8')).policies['authz-v1'].entrypoints, ['authz/v1/allow']);

  const nothing = await gatehouse(['policies', 'build', path.join(dir, 'lib'), '--out', path.join(dir, 'out2')]);
  t.equal(nothing.code, 1);
  t.match(nothing.stderr, /^gatehouse policies build: no policy found in .*lib: a policy is a file named <name>-v<N>\.rego/);

  const covered = await gatehouse(['policies', 'test', dir, '--coverage', '-r', 'small|big', '--threshold', '90']);
  t.equal(covered.code, 2, 'below the threshold');
  t.equal(JSON.parse(covered.stdout).coverage, 48, 'the report is the output');
  t.match(covered.stderr, /^Code coverage threshold not met: got 48\.00 instead of 90\.00$/m);

  const failing = await gatehouse(['policies', 'test', dir, '--coverage', '-r', 'wrong']);
  t.equal(failing.code, 1, 'a failing test fails the run');
  t.match(failing.stderr, /FAIL data\.authz\.v1_test\.test_wrong/);
  t.ok(JSON.parse(failing.stdout).files, 'and the report is still printed');

  const explained = await gatehouse(['policies', 'test', dir, '--explain', 'fails', '-r', 'wrong']);
  t.equal(explained.code, 1);
  t.match(explained.stdout, /^ {4}Fail .*authz-v1\.rego:8 input\.amount < 100 {2}\(left: 500, right: 100\)$/m);

  const usage = await gatehouse(['policies', 'test', dir, '--explain', 'why']);
  t.equal(usage.code, 2);
  t.match(usage.stderr, /--explain is fails, full, notes, not 'why'/);

  const help = await gatehouse(['policies', 'test', '--help']);
  t.match(help.stdout, /--explain fails\|full\|notes/);
  t.match(help.stdout, /--coverage/);
});
