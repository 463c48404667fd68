import { execFile, spawn } from 'node:child_process';
import { cpSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { operationDraft } from '../core/audit-log.ts';
import { call, startTestServer, tempDir } from './helpers/gatehouse.ts';
import { BUNDLED_POLICIES } from './helpers/policies.ts';
import { listening, startServe } from './helpers/serve-process.ts';
import { routesFile } from './helpers/upstream.ts';

// How `gatehouse serve` and the CLI fail: a clear message naming what failed, a non-zero exit (or
// a quiet zero where nothing went wrong), never a stack trace.

const BIN = new URL('../bin/gatehouse.js', import.meta.url).pathname;
const STACK_FRAME = /^\s+at .+:\d+:\d+\)?$/m;

t.setTimeout(600_000);

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `gatehouse <args>` to its end (killed after `timeoutMs`), whatever its exit code. */
function gatehouse(args: string[], timeoutMs = 120_000): Promise<Exit> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { timeout: timeoutMs, killSignal: 'SIGKILL' }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
    });
  });
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

/** A port free a moment ago: uWS shares only ports named explicitly (it never sets SO_REUSEPORT for port 0). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

t.test('a second serve on a port another instance holds exits 1 naming the port', async (t) => {
  const first = await startServe(['--data-dir', tempDir(t)]);
  t.teardown(() => first.child.kill('SIGKILL'));
  const port = portOf(first.url);

  const second = await gatehouse(['serve', '--port', String(port), '--data-dir', tempDir(t)]);
  t.equal(second.code, 1, 'exits 1');
  t.match(JSON.parse(second.stderr.trim().split('\n').at(-1)!), {
    level: 60,
    msg: `the API: cannot listen on 127.0.0.1:${port}: port ${port} is already in use by another process; stop it, choose another port (--port), or start every instance with --reuse-port to share it on purpose`,
  }, 'one fatal log line, saying how to share the port on purpose');
  t.notMatch(second.stderr, STACK_FRAME, 'no stack trace');
  t.notMatch(second.stdout + second.stderr, /listening on/, 'never claims to listen');

  t.equal((await call(first.url, 'GET', '/healthz')).status, 200, 'the first instance serves on');
  first.child.kill('SIGTERM');
  t.equal((await first.exited).code, 0);
});

t.test('--reuse-port on every instance shares the port on purpose', async (t) => {
  const port = await freePort();
  const first = await startServe(['--reuse-port', '--port', String(port), '--data-dir', tempDir(t)]);
  t.teardown(() => first.child.kill('SIGKILL'));
  const second = await startServe(['--reuse-port', '--port', String(port), '--data-dir', tempDir(t)]);
  t.teardown(() => second.child.kill('SIGKILL'));
  t.equal(second.url, first.url, 'both listen on the same address');

  // An instance that does not ask to share is refused, even beside sharing ones.
  const third = await gatehouse(['serve', '--port', String(port), '--data-dir', tempDir(t)]);
  t.equal(third.code, 1);
  t.match(third.stderr, `port ${port} is already in use`);

  t.equal((await call(first.url, 'GET', '/healthz')).status, 200);
  for (const served of [first, second]) {
    served.child.kill('SIGTERM');
    t.equal((await served.exited).code, 0);
  }
});

t.test('a proxy gateway port in use exits 1 naming it', async (t) => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  t.teardown(() => holder.close());
  const port = (holder.address() as AddressInfo).port;
  const dir = tempDir(t);
  const routes = routesFile(dir, [{ name: 'orders', match: { pathPrefix: '/api' }, upstream: 'http://127.0.0.1:9', policy: 'route-access-v1', auth: 'api-key' }]);

  const served = await gatehouse(['serve', '--port', '0', '--proxy-routes', routes, '--proxy-port', String(port), '--data-dir', dir]);
  t.equal(served.code, 1);
  t.match(served.stderr, `the proxy gateway: cannot listen on 127.0.0.1:${port}: port ${port} is already in use by another process`);
  t.notMatch(served.stderr, STACK_FRAME, 'no stack trace');
});

const BROKEN = `package broken.v1

default allow := false

allow if no_such_function(input.action)
`;

t.test('a policy that does not compile is left out: the others serve, /readyz says which and why, a fix reloads it', async (t) => {
  const dir = tempDir(t);
  const policies = join(dir, 'rego');
  cpSync(BUNDLED_POLICIES, policies, { recursive: true });
  writeFileSync(join(policies, 'broken-v1.rego'), BROKEN);
  const served = await startServe(['--data-dir', join(dir, 'data'), '--policies-dir', policies]);
  t.teardown(() => served.child.kill('SIGKILL'));

  t.match(served.stderr(), `${join(policies, 'broken-v1.rego')}:5:10: check error: undefined function no_such_function`, 'logged at file:line:col');
  t.notMatch(served.stderr(), STACK_FRAME, 'no stack trace');
  t.match(served.logs().find((e) => e.msg === 'policy not loaded'), { level: 50, file: join(policies, 'broken-v1.rego'), reason: /broken-v1\.rego:5:10: check error/ }, 'the policy left out is logged with why');
  t.same(listening(served).policies, ['agent-tools-v1', 'decision-gate-v1', 'route-access-v1', 'security-review-v1', 'spend-approval-v1'], 'the others are loaded');
  t.match(served.logs().find((e) => e.msg.startsWith('policies left out')), { level: 50, notLoaded: [join(policies, 'broken-v1.rego')], readyz: `${served.url}/readyz` });
  const ready = await call(served.url, 'GET', '/readyz');
  t.equal(ready.status, 200, 'ready to serve the policies that compile');
  t.match(ready.json, {
    status: 'degraded',
    notLoaded: [{ file: join(policies, 'broken-v1.rego'), reason: /broken-v1\.rego:5:10: check error: undefined function no_such_function/ }],
  });
  t.notOk(ready.json.policies.includes('broken-v1'));

  writeFileSync(join(policies, 'broken-v1.rego'), BROKEN.replace('allow if no_such_function(input.action)', 'allow if input.action == "create"'));
  let after = ready;
  for (let i = 0; i < 600 && after.json.status !== 'ready'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    after = await call(served.url, 'GET', '/readyz');
  }
  t.match(after.json, { status: 'ready', notLoaded: [] }, 'the fixed policy reloads and readiness clears');
  t.ok(after.json.policies.includes('broken-v1'));
  served.child.kill('SIGTERM');
  t.equal((await served.exited).code, 0);
});

t.test('`audit export | head` stops quietly with 0 when head closes the pipe', async (t) => {
  const { server, dataDir } = await startTestServer(t);
  // Far more than a pipe holds, so the export is still writing when the reader goes.
  await server.services.store.commit(() => {
    for (let i = 0; i < 3000; i++) server.services.audit.appendInTransaction(operationDraft('SYSTEM', `filler ${i}`, null, 0));
  });
  await server.close();

  const pipeline = spawn('bash', ['-c', `"${process.execPath}" "${BIN}" audit export --data-dir "${dataDir}" | head -n 2; echo "export exited \${PIPESTATUS[0]}" >&2`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => pipeline.kill('SIGKILL'));
  let stdout = '';
  let stderr = '';
  pipeline.stdout.on('data', (chunk) => (stdout += chunk));
  pipeline.stderr.on('data', (chunk) => (stderr += chunk));
  const code = await new Promise((resolve) => pipeline.once('exit', resolve));
  t.equal(code, 0);
  t.equal(stdout.trim().split('\n').length, 2, 'head printed its lines');
  t.match(stderr, /export exited 0/, 'the export exits 0');
  t.notMatch(stderr, /EPIPE|Error/, 'and says nothing about the closed pipe');
});
