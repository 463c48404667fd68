import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import t from 'tap';
import { call, tempDir } from './helpers/gatehouse.ts';
import { startServe } from './helpers/serve-process.ts';

// A new user's first hour, run as they would run it: the commands `gatehouse serve` prints on its
// first start, and the README's "Your first decision" block, against a real `gatehouse serve`
// child on an ephemeral port with a temporary data directory. The only substitutions are the
// server's address for http://127.0.0.1:8080 and this checkout's executable for `npx gatehouse`.

t.setTimeout(600_000);

const BIN = new URL('../bin/gatehouse.js', import.meta.url).pathname;
const README = new URL('../README.md', import.meta.url);
const run = promisify(execFile);

const dataDir = tempDir(t);
const served = await startServe(['--data-dir', dataDir]);
t.teardown(() => served.child.kill('SIGKILL'));

/** Runs `script` in bash as a user's shell would, stopping at the first failing command. */
async function shell(script: string): Promise<string> {
  const substituted = script.replaceAll('npx gatehouse', `${process.execPath} ${BIN}`).replaceAll('http://127.0.0.1:8080', served.url);
  const { stdout } = await run('bash', ['-c', `set -euo pipefail\n${substituted}`], {
    cwd: tempDir(t),
    env: { PATH: process.env.PATH, HOME: process.env.HOME, GATEHOUSE_DATA_DIR: dataDir },
    timeout: 120_000,
  });
  return stdout;
}

t.test('the first start prints commands that run a gated decision end to end', async (t) => {
  const printed = served.lines.join('\n');
  t.match(printed, /try a gated decision/);
  const commands = served.lines.filter((line) => /^\s+(CREATOR_KEY=|REVIEWER_KEY=|curl )/.test(line)).map((line) => line.trim());
  t.equal(commands.length, 3, 'two keys and a decision');
  const output = await shell(`${commands.join('\n')}\necho\necho "$CREATOR_KEY"\necho "$REVIEWER_KEY"`);
  const [decisionText, creatorKey, reviewerKey] = output.trim().split('\n');
  const decision = JSON.parse(decisionText!);
  t.match(decision, { status: 'created', gate: 'human_approval', nextAction: 'approve' }, 'the printed decision waits at the gate');
  t.match(creatorKey, /^gh_test_/, 'a sandbox key for the creator');
  t.match(reviewerKey, /^gh_test_/, 'and one for the reviewer');

  const as = (key: string, action: string) => call(served.url, 'POST', `/v1/decisions/${decision.id}/${action}`, { key, body: {} });
  t.equal((await as(creatorKey!, 'approve')).status, 403, 'the creator’s key cannot approve');
  const approved = await as(reviewerKey!, 'approve');
  t.equal(approved.json.status, 'approved', `the reviewer’s key approves: ${approved.text}`);
  const executed = await as(reviewerKey!, 'execute');
  t.equal(executed.json.status, 'executed', `and executes: ${executed.text}`);
});

interface Step {
  command: string;
  /** The answer the README shows after `#>`, line by line. */
  expected: string[];
}

/** The README's first-decision block: each command (continuation lines joined) and the answer shown after it. */
function readmeSteps(): Step[] {
  const text = readFileSync(README, 'utf8');
  const block = /<!-- first-decision:begin -->\n```sh\n([\s\S]*?)```\n<!-- first-decision:end -->/.exec(text)?.[1];
  if (!block) throw new Error('README.md has no first-decision block');
  const steps: Step[] = [];
  let pending = '';
  for (const line of block.split('\n')) {
    if (line.startsWith('#>')) steps.at(-1)!.expected.push(line.slice(3));
    else if (pending || (line.trim() && !line.startsWith('#'))) {
      pending += `${line}\n`;
      if (!line.endsWith('\\')) {
        steps.push({ command: pending, expected: [] });
        pending = '';
      }
    }
  }
  return steps;
}

t.test('every command of the README’s first decision runs and answers as shown', async (t) => {
  const steps = readmeSteps();
  t.ok(steps.length >= 8, `${steps.length} commands`);
  t.ok(steps.filter((step) => step.expected.length > 0).length >= 5, 'most show their answer');
  const output = await shell(steps.map((step, index) => `echo "@@step ${index}"\n${step.command}`).join(''));
  const answers = output.split(/^@@step \d+\n/m).slice(1);
  t.equal(answers.length, steps.length, 'every command ran');
  steps.forEach((step, index) => {
    t.same(answers[index]!.split('\n').filter(Boolean), step.expected, step.command.split('\n')[0]!);
  });
});
