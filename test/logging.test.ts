import { Writable } from 'node:stream';
import t from 'tap';
import { createLogger } from '../core/log.ts';
import { call, tempDir } from './helpers/gatehouse.ts';
import { startServe } from './helpers/serve-process.ts';

// The operational log: JSON lines with levels, request ids and redacted secrets, from the logger
// alone and from `gatehouse serve` as an operator runs it.

t.setTimeout(300_000);

function capture(): { stream: Writable; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return { stream, lines: () => chunks.join('').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

t.test('secrets are redacted wherever a logged object carries them', async (t) => {
  const { stream, lines } = capture();
  const log = createLogger('info', stream);
  log.error(
    { requestId: 'req_1', headers: { authorization: 'Bearer gh_sandbox_secret', cookie: 'gatehouse_session=s3cret', 'x-api-key': 'gh_x', accept: '*/*' }, key: 'gh_key', issued: { secret: 'whsec_abc', id: 'key_1' } },
    'refused',
  );
  const [line] = lines();
  t.match(line, { level: 50, msg: 'refused', service: 'gatehouse', requestId: 'req_1', time: /^\d{4}-\d\d-\d\dT/ });
  t.same(line!.headers, { authorization: '[Redacted]', cookie: '[Redacted]', 'x-api-key': '[Redacted]', accept: '*/*' });
  t.equal(line!.key, '[Redacted]');
  t.same(line!.issued, { secret: '[Redacted]', id: 'key_1' });
  t.notMatch(JSON.stringify(lines()), /gh_sandbox_secret|s3cret|whsec_abc|gh_key|gh_x/, 'no secret is written');
});

t.test('levels: below the level nothing is written; an unknown level warns and logs at info', async (t) => {
  const warn = capture();
  const quiet = createLogger('warn', warn.stream);
  quiet.info('routine');
  quiet.debug('detail');
  quiet.warn('attention');
  t.same(warn.lines().map((l) => l.msg), ['attention']);

  const typo = capture();
  const fallback = createLogger('verbose', typo.stream);
  fallback.debug('detail');
  fallback.info('routine');
  t.match(typo.lines(), [{ level: 40, msg: /GATEHOUSE_LOG_LEVEL verbose is not a level/ }, { level: 30, msg: 'routine' }]);
});

t.test('serve logs each request with its request id at debug, none at the default level, and never the key', async (t) => {
  const adminKey = `gh_test_${'a'.repeat(40)}`;
  const requestLines = (stderr: string) =>
    stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'request');

  const debug = await startServe(['--data-dir', tempDir(t)], { GATEHOUSE_ADMIN_KEY: adminKey, GATEHOUSE_LOG_LEVEL: 'debug' });
  t.teardown(() => debug.child.kill('SIGKILL'));
  const refused = await call(debug.url, 'GET', '/v1/decisions', { key: 'gh_test_not_a_key_at_all' });
  const listed = await call(debug.url, 'GET', '/v1/keys', { key: adminKey, signer: null });
  t.equal(refused.status, 401);
  await new Promise((resolve) => setTimeout(resolve, 200));
  const logged = requestLines(debug.stderr());
  t.match(logged, [
    { level: 20, requestId: refused.headers.get('request-id'), method: 'GET', route: '/v1/decisions', status: 401, code: 'unauthenticated', keyId: null, ms: Number },
    { requestId: listed.headers.get('request-id'), route: '/v1/keys', status: listed.status },
  ]);
  t.notMatch(debug.stderr(), /gh_test_not_a_key_at_all|gh_test_a{40}/, 'keys never reach the log');
  debug.child.kill('SIGTERM');
  await debug.exited;

  const quiet = await startServe(['--data-dir', tempDir(t)], { GATEHOUSE_ADMIN_KEY: adminKey });
  t.teardown(() => quiet.child.kill('SIGKILL'));
  await call(quiet.url, 'GET', '/v1/decisions', { key: 'gh_test_not_a_key_at_all' });
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.same(requestLines(quiet.stderr()), [], 'no request lines at info');
  quiet.child.kill('SIGTERM');
  await quiet.exited;
});
