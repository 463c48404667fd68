import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { call, issueKey, tempDir } from './helpers/gatehouse.ts';
import { listening, startServe } from './helpers/serve-process.ts';

// `gatehouse serve` end to end: start-up output (the log's JSON lines on stderr, what a person
// copies on stdout), the bootstrap admin key, graceful shutdown.

const run = promisify(execFile);
const BIN = new URL('../bin/gatehouse.js', import.meta.url).pathname;

// Compiling the bundled policies can take a while on a cold cache.
t.setTimeout(600_000);

t.test('start, serve, drain on SIGTERM, restart', async (t) => {
  const dataDir = tempDir(t);
  const first = await startServe(['--data-dir', dataDir]);
  t.teardown(() => first.child.kill('SIGKILL'));
  const printed = first.lines.join('\n');
  const admin = /bootstrap admin key \(shown once, keep it safe\): (gh_live_\S+)/.exec(printed)?.[1];
  t.ok(admin, 'the first start prints the generated admin key');
  t.match(printed, /CREATOR_KEY=\$\(npx gatehouse keys create --role creator --data-dir /);
  t.notMatch(printed, /listening on/, 'what the server does is logged, not printed for a person');
  const started = listening(first);
  t.match(started, {
    level: 30,
    service: 'gatehouse',
    msg: `listening on ${first.url} with 5 policies`,
    dataDir,
    policies: ['agent-tools-v1', 'decision-gate-v1', 'route-access-v1', 'security-review-v1', 'spend-approval-v1'],
    adminKeyId: /^key_/,
  });
  t.notMatch(first.stderr(), admin!, 'the generated admin key never reaches the log');
  t.equal((await call(first.url, 'GET', '/readyz')).status, 200);

  const key = await issueKey(first.url, admin!, { env: 'sandbox', scopes: ['decisions:write', 'decisions:read'] });
  const body = { title: 'drain me', policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 1 }] };
  const inFlight = Array.from({ length: 10 }, () => call(first.url, 'POST', '/v1/decisions', { key: key.key, body }).catch((error: Error) => error));
  await new Promise((r) => setTimeout(r, 5));
  first.child.kill('SIGTERM');
  const answers = await Promise.all(inFlight);
  const { code } = await first.exited;
  t.equal(code, 0, 'SIGTERM exits 0');
  t.match(first.logs().slice(-2), [{ msg: 'draining', signal: 'SIGTERM' }, { msg: 'stopped' }], 'logged the drain, then the stop');
  const answered = answers.filter((a): a is Exclude<typeof a, Error> => !(a instanceof Error));
  t.ok(answered.length > 0, 'requests already received were answered');
  t.ok(answered.every((a) => a.status === 200 || a.status === 503), 'in-flight requests completed');

  const verify = await run(process.execPath, [BIN, 'audit', 'verify', '--data-dir', dataDir]);
  t.match(verify.stdout, /audit chain intact/, 'the store closed cleanly');

  const second = await startServe(['--data-dir', dataDir]);
  t.teardown(() => second.child.kill('SIGKILL'));
  t.notMatch(second.lines.join('\n') + second.stderr(), /gh_live_/, 'the admin key is never printed again');
  t.equal(listening(second).adminKeyId, started.adminKeyId, 'the same admin key, by its id');
  const created = answered.filter((a) => a.status === 200).map((a) => a.json.id);
  const listed = await call(second.url, 'GET', '/v1/decisions?limit=200', { key: key.key });
  t.same(listed.json.data.map((d: { id: string }) => d.id).sort(), created.sort(), 'every 200 was stored, nothing else');
  second.child.kill('SIGTERM');
  t.equal((await second.exited).code, 0);
});

t.test('GATEHOUSE_* settings and a configured admin key', async (t) => {
  const dataDir = tempDir(t);
  const adminKey = 'operator-chosen-admin-secret-0123456789';
  const served = await startServe([], { GATEHOUSE_DATA_DIR: dataDir, GATEHOUSE_ADMIN_KEY: adminKey, GATEHOUSE_HOST: '127.0.0.1', GATEHOUSE_RATE_LIMIT_SANDBOX: '5/7' });
  t.teardown(() => served.child.kill('SIGKILL'));
  t.notMatch(served.lines.join('\n') + served.stderr(), adminKey, 'a configured key is not echoed');
  t.match(served.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const key = await issueKey(served.url, adminKey, { env: 'sandbox', scopes: ['decisions:read'] });
  t.equal((await call(served.url, 'GET', '/v1/decisions', { key: key.key })).headers.get('ratelimit-limit'), '7');
  served.child.kill('SIGINT');
  t.equal((await served.exited).code, 0);
});
