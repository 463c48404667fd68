/**
 * `print(…)` and `trace(…)` as OPA users write them: print compiled as OPA compiles it (each
 * argument the set of its values, so an undefined one prints `<undefined>` and never changes a
 * decision), its lines under a test in `policies test`, on stderr in `policies eval` and in the
 * server's log; trace notes under `--explain notes`. Real Rego, compiled by the project's compiler.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t, { type Test } from 'tap';
import { gatehouse } from './helpers/cli.ts';
import { formatTestReport, runPolicyTests } from '../policies/compiler/test-runner.ts';
import { PolicyEngine } from '../policies/engine/index.ts';

t.setTimeout(300_000);



const POLICY = `package gatehouse.gate.v1

default allow := false

allow if {
	print("checking", input.user, input.missing)
	trace("comparing the user")
	input.user == "alice"
}

level := n if {
	trace(42)
	n := 1
}
`;

const TESTS = `package gatehouse.gate.v1_test

import data.gatehouse.gate.v1

test_alice if {
	v1.allow with input as {"user": "alice"}
}

test_bob if {
	some x in [1, 2]
	print("x is", x, {"k": [x, "s"]}, "plain")
	v1.allow with input as {"user": "bob"}
}
`;

function sources(t: Test): string {
  return t.testdir({ 'gate-v1.rego': POLICY, 'gate-v1_test.rego': TESTS });
}

t.test('policies test: what a test prints is shown under it, its trace notes with --explain notes', async (t) => {
  const report = await runPolicyTests(sources(t));
  t.match(report, { passed: 1, failed: 1 });
  const bob = report.results.find((r) => r.rule === 'test_bob')!;
  t.same(
    bob.output?.filter((o) => o.kind === 'print').map((o) => o.text),
    ['x is 1 {"k": [1, "s"]} plain', 'checking bob <undefined>', 'x is 2 {"k": [2, "s"]} plain', 'checking bob <undefined>'],
    'one line per value, in evaluation order; a string as it is, other values as Rego writes them, an undefined argument as <undefined>',
  );

  const shown = formatTestReport(report);
  t.match(shown, /FAIL data\.gatehouse\.gate\.v1_test\.test_bob[^\n]*\n(?:.*\n)*?\n  x is 1 \{"k": \[1, "s"\]\} plain\n  checking bob <undefined>\n/, 'a failing test shows what it printed');
  t.notMatch(shown, /checking alice/, 'a passing test prints nothing without --verbose');
  t.notMatch(shown, /Note/, 'and no notes without --explain notes');
  t.match(formatTestReport(report, true), /PASS data\.gatehouse\.gate\.v1_test\.test_alice[^\n]*\n\n  checking alice <undefined>\n/, '--verbose shows what a passing test printed');
  t.match(formatTestReport(report, true, 'notes'), /test_alice[^\n]*\n(?:.*\n)*?  \| Note "comparing the user"/, '--explain notes shows trace notes');

  const cli = await gatehouse(['policies', 'test', sources(t), '--explain', 'notes']);
  t.equal(cli.code, 1, 'the command fails with the failing test');
  t.match(cli.stdout, /  checking bob <undefined>/);
  t.match(cli.stdout, /\| Note "comparing the user"/);
});

t.test('policies eval writes what the policy prints to stderr, the result to stdout', async (t) => {
  const dir = sources(t);
  const input = path.join(dir, 'input.json');
  await writeFile(input, JSON.stringify({ user: 'alice' }));
  const evaluated = await gatehouse(['policies', 'eval', '-d', dir, '-i', input, 'data.gatehouse.gate.v1.allow']);
  t.equal(evaluated.code, 0, evaluated.stderr);
  t.equal(evaluated.stderr, 'checking alice <undefined>\n');
  t.match(JSON.parse(evaluated.stdout), { result: [{ expressions: [{ value: true }] }] });
});

t.test('printing never changes a decision; the server logs what a policy prints and notes', async (t) => {
  const dir = t.testdir({ src: { 'gate-v1.rego': POLICY } });
  const logged: Array<{ fields: Record<string, unknown>; message: string }> = [];
  const engine = await PolicyEngine.open({
    sourceDir: path.join(dir, 'src'),
    buildDir: path.join(dir, 'build'),
    log: { info: (fields, message) => logged.push({ fields, message }), error: () => {} },
  });
  t.teardown(() => engine.close());
  t.match(engine.evaluate('gate-v1', { user: 'alice' }).value, { allow: true }, 'an undefined argument to print does not make the rule undefined');
  t.match(engine.evaluate('gate-v1', { user: 'bob' }).value, { allow: false });
  t.same(
    logged.filter((l) => l.message.startsWith('policy ')),
    [
      { fields: { policy: 'gate-v1', print: 'checking alice <undefined>' }, message: 'policy print' },
      { fields: { policy: 'gate-v1', note: 'comparing the user' }, message: 'policy trace note' },
      { fields: { policy: 'gate-v1', print: 'checking bob <undefined>' }, message: 'policy print' },
      { fields: { policy: 'gate-v1', note: 'comparing the user' }, message: 'policy trace note' },
    ],
    'each line and note, with the policy that said it',
  );
  t.notOk('level' in (engine.evaluate('gate-v1', {}).value as object), 'trace of a non-string is undefined, as in OPA');
});
