import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { openPolicies, settings } from '../cli/commands/serve.ts';
import { PolicyEngine } from '../policies/engine/index.ts';
import { call, issueKey, startTestServer, tempDir } from './helpers/gatehouse.ts';

// Policies that would hold the event loop for seconds are cut off by their budgets (the runtime's
// numbers.range size limit, the module's memory cap, the module's iteration budget) and denied
// with the budget as the reason, while policies within them answer as before. Real Rego,
// compiled by the project's compiler.

// Compiling the policy runtime on a cold cache takes a while.
t.setTimeout(600_000);

const decision = (body: string) => `package gatehouse.${body}\n\ngate := "auto"\n\nnextAction := "execute"\n`;

const SOURCES: Record<string, string> = {
  // The issue's stall: 5e7 integers took 1.6 s to build before the memory cap stopped them.
  'stall-v1.rego': decision('stall.v1\n\nallow if count(numbers.range(1, 5e7)) > 0'),
  // 10^10 elements, built one by one: only the memory cap stops it.
  'hog-v1.rego': decision('hog.v1\n\nallow if count([x | some x in numbers.range(1, 100000); some y in numbers.range(1, 100000)]) > 0'),
  'plain-v1.rego': decision('plain.v1\n\nallow := true'),
  // 10^10 steps that allocate nothing: the range is built once, and comparing an element with a
  // constant allocates nothing, so only the iteration budget stops it.
  'spin-v1.rego': decision('spin.v1\n\nr := numbers.range(1, 100000)\n\nallow if every i in r { every j in r { j != 0 } }'),
  // 2^40 calls and no loop at all: each function calls the next twice.
  'calls-v1.rego': decision(
    `calls.v1\n\nallow if f0(1) > 0\n\n${Array.from({ length: 40 }, (_, i) => `f${i}(x) := f${i + 1}(x) + f${i + 1}(x)`).join('\n')}\nf40(x) := x`,
  ),
  // n × n steps.
  'square-v1.rego': 'package gatehouse.square.v1\n\nr := numbers.range(1, input.n)\n\nall_positive if every i in r { every j in r { j > 0 } }\n',
  'sized-v1.rego': 'package gatehouse.sized.v1\n\nsize := count(numbers.range(1, input.n))\n',
  'hosts-v1.rego': 'package gatehouse.hosts.v1\n\nsize := count(net.cidr_expand(input.cidr))\n',
  'globs-v1.rego': 'package gatehouse.globs.v1\n\nmeet := regex.globs_match(input.a, input.b)\n',
  'matches-v1.rego': 'package gatehouse.matches.v1\n\nsize := count(net.cidr_contains_matches(input.cidrs, input.ips))\n',
  'indexed-v1.rego': 'package gatehouse.indexed.v1\n\nat := indexof(input.s, input.sub)\n\nevery_at := count(indexof_n(input.s, input.sub))\n',
  'replaced-v1.rego': 'package gatehouse.replaced.v1\n\nsize := count(strings.replace_n(input.patterns, input.s))\n',
};

async function openEngine(dir: string, budgets: { maxMemoryPages?: number; maxIterations?: number } = {}): Promise<PolicyEngine> {
  const sourceDir = join(dir, 'src');
  mkdirSync(sourceDir, { recursive: true });
  for (const [file, text] of Object.entries(SOURCES)) writeFileSync(join(sourceDir, file), text);
  return PolicyEngine.open({ sourceDir, buildDir: join(dir, 'build'), ...budgets });
}

t.test('numbers.range refuses ranges beyond its size budget and builds those within it', async (t) => {
  const engine = await openEngine(tempDir(t));
  t.teardown(() => engine.close());
  t.same(engine.evaluate('sized-v1', { n: 100000 }).value, { size: 100000 }, 'the largest range allowed');
  for (const n of [100001, 5e7, 1e18]) {
    const over = engine.evaluate('sized-v1', { n });
    t.equal(over.value, undefined, `numbers.range(1, ${n}) has no value`);
    t.equal(over.error, 'policy exceeded its size budget: numbers.range builds at most 100000 elements');
  }
  t.same(engine.evaluate('sized-v1', { n: 3 }).value, { size: 3 }, 'the module answers after a refusal');
});

t.test('net.cidr_expand refuses networks beyond its size budget and lists those within it', async (t) => {
  const engine = await openEngine(tempDir(t));
  t.teardown(() => engine.close());
  t.same(engine.evaluate('hosts-v1', { cidr: '10.0.0.0/16' }).value, { size: 65536 }, 'the largest network allowed');
  t.same(engine.evaluate('hosts-v1', { cidr: 'fd00::/112' }).value, { size: 65536 }, 'IPv6 alike');
  for (const cidr of ['10.0.0.0/15', '0.0.0.0/0', '::/0']) {
    const over = engine.evaluate('hosts-v1', { cidr });
    t.equal(over.value, undefined, `net.cidr_expand(${cidr}) has no value`);
    t.equal(over.error, 'policy exceeded its size budget: net.cidr_expand builds at most 65536 elements');
  }
});

t.test('regex.globs_match gives up on globs whose intersection would take exponential time, and answers the rest', async (t) => {
  const engine = await openEngine(tempDir(t));
  t.teardown(() => engine.close());
  const globs = (n: number) => ({ a: `${'.*a'.repeat(n)}b+`, b: `${'a*.'.repeat(n)}c+` });
  t.same(engine.evaluate('globs-v1', globs(4)).value, { meet: false }, 'a few flagged tokens are decided');
  t.same(engine.evaluate('globs-v1', { a: 'a.*z', b: 'ab+c*z' }).value, { meet: true });
  // Without the budget this evaluation ran for over a minute.
  const over = engine.evaluate('globs-v1', globs(16));
  t.equal(over.value, undefined, 'sixteen of each has no value');
  t.equal(over.error, 'policy exceeded its size budget: regex.globs_match gave up after 2000000 steps');
});

t.test('net.cidr_contains_matches compares at most a million pairs', async (t) => {
  const engine = await openEngine(tempDir(t));
  t.teardown(() => engine.close());
  const cidrs = (n: number) => Array.from({ length: n }, (_, i) => `10.${i >> 8}.${i & 255}.0/24`);
  const ips = (n: number) => Array.from({ length: n }, (_, i) => `10.${i >> 8}.${i & 255}.7`);
  t.same(engine.evaluate('matches-v1', { cidrs: cidrs(1000), ips: ips(1000) }).value, { size: 1000 }, 'a thousand by a thousand, each address in its own network');
  const over = engine.evaluate('matches-v1', { cidrs: cidrs(1000), ips: ips(1001) });
  t.equal(over.value, undefined, 'one pair more has no value');
  t.equal(over.error, 'policy exceeded its size budget: net.cidr_contains_matches compares at most 1000000 pairs');
});

t.test('strings.replace_n compares at most 100,000,000 bytes; ordinary text of a megabyte is far from it', async (t) => {
  const engine = await openEngine(tempDir(t));
  t.teardown(() => engine.close());
  const text = 'the quick brown fox jumps over the lazy dog '.repeat(24_000);
  const ordinary = engine.evaluate('replaced-v1', { patterns: { quick: 'sluggish', lazy: 'eager', fox: 'cat', dog: 'hen' }, s: text });
  t.same(ordinary.value, { size: text.length + 24_000 * 4 }, 'four keys over a megabyte of text (quick and lazy each grow the text)');
  // Every position nearly matches the key: 100,000 positions of 100,000 bytes each.
  const over = engine.evaluate('replaced-v1', { patterns: { [`${'a'.repeat(100_000)}b`]: 'z' }, s: 'a'.repeat(200_000) });
  t.equal(over.value, undefined, 'a text that nearly matches its key everywhere has no value');
  t.equal(over.error, 'policy exceeded its size budget: strings.replace_n compares at most 100000000 bytes');
});

t.test('indexof and indexof_n find a needle that nearly matches, or matches, everywhere in linear time, with no budget to hit', async (t) => {
  const engine = await openEngine(tempDir(t));
  t.teardown(() => engine.close());
  // It took 30 s, searching candidate by candidate.
  const found = engine.evaluate('indexed-v1', { s: `${'a'.repeat(300_000)}b`, sub: `${'a'.repeat(150_000)}b` });
  t.same(found.value, { at: 150_000, every_at: 1 });
  // Every position from 0 to 150,000 matches: searching again from each match cost the needle's length per match.
  const overlapping = engine.evaluate('indexed-v1', { s: 'a'.repeat(300_000), sub: 'a'.repeat(150_000) });
  t.same(overlapping.value, { at: 0, every_at: 150_001 });
});

t.test('a runaway allocation stops at the memory cap, with the cap as the reason', async (t) => {
  const engine = await openEngine(tempDir(t), { maxMemoryPages: 256 });
  t.teardown(() => engine.close());
  const hog = engine.evaluate('hog-v1', {});
  t.equal(hog.value, undefined);
  t.equal(hog.error, 'policy exceeded its memory budget of 16 MiB');
  const input = engine.evaluate('plain-v1', { blob: 'x'.repeat(32 * 1024 * 1024) });
  t.equal(input.error, 'policy exceeded its memory budget of 16 MiB', 'an input larger than the cap is refused alike');
  t.same(engine.evaluate('plain-v1', {}).value, { allow: true, gate: 'auto', nextAction: 'execute' }, 'a fresh instance serves next');
});

t.test('a loop that allocates nothing, or calls that multiply, stop at the iteration budget', async (t) => {
  const engine = await openEngine(tempDir(t));
  t.teardown(() => engine.close());
  for (const policy of ['spin-v1', 'calls-v1']) {
    const stopped = engine.evaluate(policy, {});
    t.equal(stopped.value, undefined, `${policy} has no value`);
    t.equal(stopped.error, 'policy exceeded its iteration budget of 10,000,000 loop iterations and calls', `${policy}: the budget is the reason`);
  }
  t.match(engine.evaluate('square-v1', { n: 3000 }).value, { all_positive: true }, '9 million steps are within the default budget');
  t.same(engine.evaluate('plain-v1', {}).value, { allow: true, gate: 'auto', nextAction: 'execute' }, 'a fresh instance serves next');
  t.match(engine.evaluate('square-v1', { n: 3000 }).value, { all_positive: true }, 'and the budget is refilled for each evaluation');
});

t.test('the iteration budget is the engine\'s to set', async (t) => {
  const dir = tempDir(t);
  const engine = await openEngine(dir, { maxIterations: 10_000 });
  t.teardown(() => engine.close());
  t.match(engine.evaluate('square-v1', { n: 99 }).value, { all_positive: true }, '99 × 99 steps and the range\'s rule call fit in 10,000');
  t.equal(engine.evaluate('square-v1', { n: 101 }).error, 'policy exceeded its iteration budget of 10,000 loop iterations and calls', '101 × 101 do not');
  await t.rejects(openEngine(tempDir(t), { maxIterations: 0 }), /maxIterations must be an integer from 1/, 'a budget of nothing is refused');

  const option = settings(['--policy-max-iterations', '5000'], {});
  t.equal(option === 'help' ? option : option.policyMaxIterations, 5000, 'gatehouse serve --policy-max-iterations');
  const fromEnv = settings([], { GATEHOUSE_POLICY_MAX_ITERATIONS: '20000' });
  t.equal(fromEnv === 'help' ? fromEnv : fromEnv.policyMaxIterations, 20000, 'or GATEHOUSE_POLICY_MAX_ITERATIONS');
  t.throws(() => settings(['--policy-max-iterations', 'lots'], {}), /--policy-max-iterations must be an integer/);
  const served = await openPolicies({ policiesDir: join(dir, 'src'), dataDir: join(dir, 'served'), bundleKeysFile: undefined, policyCacheDir: undefined, policyMaxIterations: 10_000 }, false);
  t.teardown(() => served.close());
  t.match(served.evaluate('square-v1', { n: 101 }).error, /iteration budget of 10,000 loop/, 'and the server\'s engine keeps to it');
});

t.test('over the API: denied with the budget as the reason, the server keeps answering, other policies are unaffected', async (t) => {
  const engine = await openEngine(tempDir(t));
  t.teardown(() => engine.close());
  const { url, admin } = await startTestServer(t, { policies: engine });
  const { key } = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read', 'decisions:write'] });
  const create = (policy: string) => call(url, 'POST', '/v1/decisions', { key, body: { title: `under ${policy}`, policy, context: 'budget test' } });

  const stalled = await create('stall-v1');
  t.equal(stalled.status, 403, stalled.text);
  t.equal(stalled.json.code, 'policy_denied');
  t.match(stalled.json.detail, /policy exceeded its size budget: numbers\.range builds at most 100000 elements/);

  const hogged = await create('hog-v1');
  t.equal(hogged.status, 403, hogged.text);
  t.match(hogged.json.detail, /policy exceeded its memory budget of 64 MiB/);

  const spun = await create('spin-v1');
  t.equal(spun.status, 403, spun.text);
  t.match(spun.json.detail, /policy exceeded its iteration budget of 10,000,000 loop iterations and calls/);

  t.equal((await call(url, 'GET', '/healthz')).status, 200, 'the server answers the next request');
  const plain = await create('plain-v1');
  t.equal(plain.status, 200, plain.text);
  t.match(plain.json, { status: 'created', gate: 'auto', policy: 'plain-v1' });
});
