import t, { type Test } from 'tap';
import { log } from '../core/log.ts';
import { call, startTestServer, type Answer } from './helpers/gatehouse.ts';

// No request may end the process (docs/security.md): a malformed path is 400, and an exception
// that escapes the pipeline, wherever it is thrown, is a logged 500 problem document.

const isProblem = (t: Test, answer: Answer, status: number, code: string) => {
  t.equal(answer.status, status, `status ${status}`);
  t.match(answer.headers.get('content-type'), /^application\/problem\+json/);
  t.match(answer.json, { status, code, requestId: /^req_/ });
};

t.test('a malformed percent-escape in a path parameter is 400 (401 without a key)', async (t) => {
  const { url, admin } = await startTestServer(t);
  for (const path of ['/v1/decisions/%ff', '/v1/decisions/%', '/v1/decisions/%zz/approve', '/v1/memory/%c3%28/versions', '/v1/keys/%ed%a0%80/signing-keys']) {
    const method = path.endsWith('approve') ? 'POST' : 'GET';
    isProblem(t, await call(url, method, path), 401, 'unauthenticated');
    const answer = await call(url, method, path, { key: admin });
    isProblem(t, answer, 400, 'invalid_request');
    t.match(answer.json.errors, [{ path: /^params\/(id|kid)$/, message: 'Expected valid percent-encoding' }]);
  }
  t.equal((await call(url, 'GET', '/healthz')).status, 200, 'the server is alive');
  t.equal((await call(url, 'GET', '/v1/decisions/dec_%31', { key: admin })).status, 404, 'valid escapes are decoded');
});

/** Makes reading `owner[name]` throw until the returned function restores it. */
function breakMember(owner: object, name: string): () => void {
  const own = Object.getOwnPropertyDescriptor(owner, name);
  Object.defineProperty(owner, name, {
    configurable: true,
    get() {
      throw new Error(`injected fault in ${name}`);
    },
  });
  return () => (own ? Object.defineProperty(owner, name, own) : Reflect.deleteProperty(owner, name));
}

t.test('an exception outside the pipeline is a 500 problem document and the server lives on', async (t) => {
  const { url, admin, server } = await startTestServer(t);
  const { services } = server;
  // What the server's logger is told (core/log.ts), in place of its JSON lines on stderr.
  const errors: Array<{ requestId?: string; err?: Error }> = [];
  const logError = log.error;
  log.error = ((fields: { requestId?: string; err?: Error }) => void errors.push(fields)) as typeof log.error;
  t.teardown(() => (log.error = logError));

  const faults: Array<[string, () => () => void, () => Promise<Answer>]> = [
    // Read synchronously in the uWS handler, before the pipeline starts.
    ['in the uWS handler', () => breakMember(services, 'limits'), () => call(url, 'POST', '/v1/decisions', { key: admin, body: { title: 't' } })],
    // Called after the commit, so the pipeline's promise rejects.
    ['in the pipeline', () => breakMember(services.events, 'announce'), () => call(url, 'GET', '/v1/keys', { key: admin })],
    // Called while sending the reply.
    ['while sending', () => breakMember(services.metrics.requests, 'inc'), () => call(url, 'GET', '/healthz')],
  ];
  for (const [where, inject, request] of faults) {
    const restore = inject();
    const answer = await request();
    restore();
    isProblem(t, answer, 500, 'internal');
    t.equal(answer.json.detail, 'the server could not complete this request', `${where}: the cause is not shown`);
    t.equal(answer.headers.get('request-id'), answer.json.requestId);
    t.ok(
      errors.some((fields) => fields.requestId === answer.json.requestId && String(fields.err?.message).includes('injected fault')),
      `${where}: the cause is logged with the request id`,
    );
    t.equal((await call(url, 'GET', '/healthz')).status, 200, `${where}: the server answers afterwards`);
  }
});
