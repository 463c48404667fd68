import t, { type Test } from 'tap';
import { call, issueKey, startTestServer } from './helpers/gatehouse.ts';

// Transport refusals: every one is an RFC 9457 problem document with a request id.

const isProblem = (t: Test, answer: { status: number; headers: Headers; json: any }, status: number, code: string) => {
  t.equal(answer.status, status, `status ${status}`);
  t.match(answer.headers.get('content-type'), /^application\/problem\+json/);
  t.match(answer.json, { type: `urn:gatehouse:problem:${code}`, title: String, status, detail: String, code, requestId: /^req_/ });
  t.equal(answer.headers.get('request-id'), answer.json.requestId, 'request id header matches the body');
};

t.test('routing, parsing and authentication refusals', async (t) => {
  const { url, admin } = await startTestServer(t, { bodyLimitBytes: 1024 });
  const writer = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:write', 'decisions:read'] });

  isProblem(t, await call(url, 'GET', '/v1/nothing-here'), 404, 'not_found');
  isProblem(t, await call(url, 'GET', '/nothing/here'), 404, 'not_found');
  const root = await fetch(`${url}/`, { redirect: 'manual' });
  t.equal(root.headers.get('location'), '/console', 'the root leads a person to the console');

  const wrongMethod = await call(url, 'PUT', '/v1/decisions', { key: writer.key });
  isProblem(t, wrongMethod, 405, 'method_not_allowed');
  t.equal(wrongMethod.headers.get('allow'), 'POST, GET');
  isProblem(t, await call(url, 'PATCH', '/v1/decisions/dec_x/approve'), 405, 'method_not_allowed');

  const missing = await call(url, 'GET', '/v1/decisions');
  isProblem(t, missing, 401, 'unauthenticated');
  t.equal(missing.headers.get('www-authenticate'), 'Bearer realm="gatehouse"');
  const unknown = await call(url, 'GET', '/v1/decisions', { key: 'gh_test_not-a-key' });
  isProblem(t, unknown, 401, 'unauthenticated');
  t.match(unknown.headers.get('www-authenticate'), /error="invalid_token"/);
  isProblem(t, await call(url, 'GET', '/v1/decisions', { headers: { authorization: 'Basic abc' } }), 401, 'unauthenticated');

  const malformed = await call(url, 'POST', '/v1/decisions', { key: writer.key, raw: '{"title":', headers: { 'content-type': 'application/json' } });
  isProblem(t, malformed, 400, 'invalid_request');
  t.match(malformed.json.detail, /not valid JSON/);

  isProblem(t, await call(url, 'POST', '/v1/decisions', { key: writer.key, raw: 'title=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415, 'unsupported_media_type');
  isProblem(t, await call(url, 'POST', '/v1/decisions', { key: writer.key, raw: '{}' }), 415, 'unsupported_media_type');
  isProblem(t, await call(url, 'POST', '/v1/decisions', { key: writer.key }), 400, 'invalid_request');

  const big = await call(url, 'POST', '/v1/decisions', { key: writer.key, body: { title: 'x', policy: 'p', context: 'y'.repeat(5000) } });
  isProblem(t, big, 413, 'payload_too_large');
  t.equal(big.json.limit, 1024);
});

t.test('schema validation', async (t) => {
  const { url, admin } = await startTestServer(t);
  const writer = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:write'] });
  const post = (body: unknown) => call(url, 'POST', '/v1/decisions', { key: writer.key, body });
  const valid = { title: 'Ship it', policy: 'decision-gate-v1', context: 'text' };

  const cases: [string, unknown][] = [
    ['empty title', { ...valid, title: '' }],
    ['title over 256', { ...valid, title: 'x'.repeat(257) }],
    ['missing policy', { title: 'x', context: 'y' }],
    ['context neither text nor entries', { ...valid, context: 42 }],
    ['context entry with a bad source', { ...valid, context: [{ source: 'no-namespace', value: 1 }] }],
    ['context entry with a non-number', { ...valid, context: [{ source: 'risk:score', value: '7' }] }],
    ['context with 1001 entries', { ...valid, context: Array.from({ length: 1001 }, (_, i) => ({ source: `m:n${i}`, value: i })) }],
    ['context text over 64 KiB', { ...valid, context: 'é'.repeat(40 * 1024) }],
    ['101 inputs', { ...valid, inputs: Array.from({ length: 101 }, (_, i) => `doc:${i}`) }],
    ['an input without a namespace', { ...valid, inputs: ['plain'] }],
    ['unknown member', { ...valid, extra: true }],
    ['not an object', [valid]],
  ];
  for (const [name, body] of cases) {
    const answer = await post(body);
    t.equal(answer.status, 400, name);
    t.equal(answer.json.code, 'invalid_request', `${name}: code`);
    t.ok(Array.isArray(answer.json.errors) && answer.json.errors.length > 0, `${name}: lists what is wrong`);
  }

  // A valid body naming a policy that is not loaded.
  const unknown = await post({ ...valid, policy: 'no-such-policy-v1', context: [{ source: 'risk:score', value: 1 }] });
  t.equal(unknown.status, 422);
  t.equal(unknown.json.code, 'unknown_policy');

  const badQuery = await call(url, 'GET', '/v1/decisions?limit=0', { key: (await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] })).key });
  t.equal(badQuery.status, 400);
  t.match(badQuery.json.errors[0].path, /^query\/limit/);
});

t.test('ops endpoints', async (t) => {
  const { url } = await startTestServer(t);
  const health = await call(url, 'GET', '/healthz');
  t.same([health.status, health.json], [200, { status: 'ok' }]);
  const ready = await call(url, 'GET', '/readyz');
  t.equal(ready.status, 503, 'not ready without policies');
  t.match(ready.json.detail, /no policies/);
  await call(url, 'GET', '/v1/nowhere');
  const metrics = await call(url, 'GET', '/metrics');
  t.equal(metrics.status, 200);
  t.match(metrics.headers.get('content-type'), /^text\/plain/);
  for (const name of [
    'gatehouse_http_requests_total',
    'gatehouse_http_request_duration_seconds_bucket',
    'gatehouse_policy_evaluation_duration_seconds',
    'gatehouse_audit_append_duration_seconds',
    'gatehouse_rate_limited_total',
  ]) {
    t.match(metrics.text, name, `exposes ${name}`);
  }
  t.match(metrics.text, /gatehouse_http_requests_total\{method="GET",route="unmatched",status="404"\} 1/);
  t.match(metrics.text, /gatehouse_http_requests_total\{method="GET",route="\/readyz",status="503"\} 1/);
});
