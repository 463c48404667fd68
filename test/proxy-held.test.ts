import t, { type Test } from 'tap';
import { call, issueKey, startTestServer, tempDir } from './helpers/gatehouse.ts';
import { routePolicies, routesFile, send, settled, startUpstream, type Upstream } from './helpers/upstream.ts';

// Requests the route policy gates are held as governed decisions: 202 with the decision's
// location, sent to the upstream exactly once when the decision is approved and executed, and
// their response read back from GET /v1/decisions/{id}/result.

t.setTimeout(600_000);
// The bundled data gates only requests that must also be signed; gate one that need not be.
const engine = await routePolicies(t, { gated: [{ methods: ['POST'], paths: ['/api/payments'] }] });
t.teardown(() => engine.close());

const READ = ['decisions:read'];
const ACT = ['decisions:read', 'decisions:approve', 'decisions:execute', 'decisions:write'];

async function setup(t: Test, upstream: Upstream, bodyLimitBytes?: number) {
  const file = routesFile(tempDir(t), [{ name: 'payments', match: { pathPrefix: '/api' }, upstream: upstream.url, policy: 'route-access-v1', auth: 'api-key' }]);
  const { url, admin, server } = await startTestServer(t, { policies: engine, proxy: { routesFile: file, port: 0 }, ...(bodyLimitBytes ? { bodyLimitBytes } : {}) });
  const requester = await issueKey(url, admin, { env: 'sandbox', scopes: ACT, roles: ['developer'], name: 'requester' });
  const approver = await issueKey(url, admin, { env: 'sandbox', scopes: ACT, roles: ['developer'], name: 'approver' });
  const viewer = await issueKey(url, admin, { env: 'sandbox', scopes: ACT, roles: ['viewer'], name: 'viewer' });
  const reader = await issueKey(url, admin, { env: 'sandbox', scopes: READ, name: 'reader' });
  const act = (key: { key: string }, id: string, action: string) => call(url, 'POST', `/v1/decisions/${id}/${action}`, { key: key.key });
  const result = (key: { key: string }, id: string) => call(url, 'GET', `/v1/decisions/${id}/result`, { key: key.key });
  return { url, server, gateway: server.gateway!.url, requester, approver, viewer, reader, act, result };
}

const PAYMENT = JSON.stringify({ amount: 4200, to: 'acme' });

t.test('a held request is sent once, after approval and execution, and its response kept', async (t) => {
  const upstream = await startUpstream(t);
  const { gateway, server, requester, approver, viewer, reader, act, result } = await setup(t, upstream);
  const held = await send(gateway, 'POST', '/api/payments?dryRun=false', {
    headers: { authorization: `Bearer ${requester.key}`, 'content-type': 'application/json', cookie: 'session=secret', 'x-request-id': 'pay-1' },
    body: PAYMENT,
  });
  t.equal(held.status, 202, held.body.toString());
  const id = held.json.id;
  t.match(id, /^dec_/);
  t.equal(held.headers['location'], `/v1/decisions/${id}`);
  t.match(held.json, {
    status: 'created',
    gate: 'human_approval',
    nextAction: 'approve',
    policy: 'route-access-v1',
    subject: { type: 'proxy-request', id: /^hold_/ },
    createdBy: requester.id,
    result: `/v1/decisions/${id}/result`,
  });
  t.ok(held.json.reasons.includes('POST /api/payments needs human approval'));
  t.equal(upstream.received.length, 0, 'nothing is sent before approval');

  const waiting = await result(reader, id);
  t.equal(waiting.status, 200);
  t.match(waiting.json, { decisionId: id, state: 'held', request: { route: 'payments', method: 'POST', target: '/api/payments?dryRun=false' }, response: null, error: null });

  const own = await act(requester, id, 'approve');
  t.equal(own.status, 403, 'the requester may not approve');
  t.ok(own.json.reasons.includes('the requester of a held request may not approve it'));
  const ungranted = await act(viewer, id, 'approve');
  t.equal(ungranted.status, 403, 'an approver must be granted the request');
  t.ok(ungranted.json.reasons.includes('no role of this key grants POST /api/payments'));
  t.equal((await act(approver, id, 'execute')).status, 403, 'not before approval');

  const approved = await act(approver, id, 'approve');
  t.equal(approved.status, 200, approved.text);
  t.match(approved.json, { status: 'approved', nextAction: 'execute' });
  t.equal(upstream.received.length, 0, 'approval alone sends nothing');

  const executed = await act(approver, id, 'execute');
  t.equal(executed.status, 200, executed.text);
  t.equal(executed.json.status, 'executed');

  const done = await settled(() => result(reader, id));
  t.equal(done.json.state, 'complete', done.text);
  t.equal(upstream.received.length, 1, 'sent exactly once');
  const sent = upstream.received[0]!;
  t.equal(sent.method, 'POST');
  t.equal(sent.url, '/api/payments?dryRun=false');
  t.equal(sent.body.toString(), PAYMENT, 'the body as held');
  t.equal(sent.headers['content-type'], 'application/json');
  t.equal(sent.headers['x-request-id'], 'pay-1');
  t.equal(sent.headers['authorization'], undefined, 'the key is not sent');
  t.equal(sent.headers['cookie'], undefined, 'headers outside the allowlist are not kept');
  t.equal(sent.headers['x-forwarded-for'], '127.0.0.1');
  t.match(done.json.response, { status: 200, truncated: false, headers: { 'content-type': 'application/json', 'x-upstream': 'yes' } });
  t.same(JSON.parse(Buffer.from(done.json.response.body, 'base64').toString()), { method: 'POST', url: '/api/payments?dryRun=false' });

  const again = await act(approver, id, 'execute');
  t.equal(again.status, 409, 'an executed decision cannot be executed again');
  await server.services.heldRequests.idle();
  t.equal(upstream.received.length, 1, 'still exactly once');

  const trace = [...server.services.audit.all()].filter((e) => e.decisionId === id);
  t.match(
    trace.map((e) => [e.route, e.status, e.proxy?.outcome ?? null]),
    [
      ['proxy:payments', 202, 'held'],
      ['/v1/decisions/{id}/result', 200, null],
      ['/v1/decisions/{id}/approve', 403, null],
      ['/v1/decisions/{id}/approve', 403, null],
      ['/v1/decisions/{id}/execute', 403, null],
      ['/v1/decisions/{id}/approve', 200, null],
      ['/v1/decisions/{id}/execute', 200, null],
    ],
    'the hold and every action are on the decision’s trace',
  );
  const sentEntry = trace.find((e) => e.proxy?.outcome === 'sent');
  t.match(sentEntry, { route: 'proxy:payments', status: 200, keyId: requester.id, traceRef: held.json.auditTrail, proxy: { upstreamStatus: 200 } });
  t.ok(server.services.audit.verify().ok);
});

t.test('a rejected held request is never sent', async (t) => {
  const upstream = await startUpstream(t);
  const { gateway, server, requester, approver, reader, act, result } = await setup(t, upstream);
  const held = await send(gateway, 'POST', '/api/payments', { headers: { authorization: `Bearer ${requester.key}`, 'content-type': 'application/json' }, body: PAYMENT });
  t.equal(held.status, 202);
  t.equal((await act(approver, held.json.id, 'reject')).status, 200);
  t.equal((await result(reader, held.json.id)).json.state, 'withdrawn');
  t.equal((await act(approver, held.json.id, 'execute')).status, 409);
  await server.services.heldRequests.idle();
  t.equal(upstream.received.length, 0);
});

t.test('an upstream that is down when the held request is sent: failed, and said so', async (t) => {
  const upstream = await startUpstream(t);
  const { gateway, requester, approver, reader, act, result } = await setup(t, upstream);
  const held = await send(gateway, 'POST', '/api/payments', { headers: { authorization: `Bearer ${requester.key}`, 'content-type': 'application/json' }, body: PAYMENT });
  t.equal((await act(approver, held.json.id, 'approve')).status, 200);
  upstream.server.closeAllConnections();
  await new Promise<void>((resolve) => upstream.server.close(() => resolve()));
  t.equal((await act(approver, held.json.id, 'execute')).status, 200);
  const done = await settled(() => result(reader, held.json.id));
  t.match(done.json, { state: 'failed', response: null, error: { code: 'upstream_unavailable', detail: /could not be reached/ } });
});

t.test('held bodies are bounded; other decisions have no result', async (t) => {
  const upstream = await startUpstream(t);
  const { url, gateway, requester, reader } = await setup(t, upstream, 1024);
  const big = await send(gateway, 'POST', '/api/payments', { headers: { authorization: `Bearer ${requester.key}`, 'content-type': 'application/json' }, body: 'x'.repeat(4096) });
  t.equal(big.status, 413);
  t.equal(big.json.code, 'payload_too_large');
  t.equal(upstream.received.length, 0);

  const plain = await call(url, 'POST', '/v1/decisions', { key: requester.key, body: { title: 'Deploy', policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 10 }] } });
  t.equal(plain.status, 200, plain.text);
  const none = await call(url, 'GET', `/v1/decisions/${plain.json.id}/result`, { key: reader.key });
  t.equal(none.status, 404);
  t.match(none.json.detail, /does not hold a proxied request/);
  t.equal((await call(url, 'GET', '/v1/decisions/dec_missing/result', { key: reader.key })).status, 404);
});
