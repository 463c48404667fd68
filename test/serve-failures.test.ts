import { execFile } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import t from 'tap';
import { call, tempDir } from './helpers/gatehouse.ts';
import { startServe } from './helpers/serve-process.ts';
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
  t.match(second.stderr, `cannot listen on 127.0.0.1:${port}: port ${port} is already in use by another process`);
  t.match(second.stderr, /--reuse-port/, 'says how to share the port on purpose');
  t.notMatch(second.stderr, STACK_FRAME, 'no stack trace');
  t.notMatch(second.stdout, /listening on/, 'never claims to listen');

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
