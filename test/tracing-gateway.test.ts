import t, { type Test } from 'tap';
import { WebSocket } from 'ws';
import { call, issueKey, startTestServer, tempDir } from './helpers/gatehouse.ts';
import { attribute, SPAN_KIND, startOtlpReceiver, STATUS_ERROR, type OtlpSpan } from './helpers/otlp-receiver.ts';
import { closedPort, echoWebSockets, OPEN_ACCESS, proxyEntries, routePolicies, routesFile, send, settled, startUpstream } from './helpers/upstream.ts';

// The proxy gateway's traces, exported over OTLP/HTTP to a receiver on 127.0.0.1: a server span
// per gateway request, continuing the caller's traceparent, and a client span under it for each
// exchange with the upstream (each try, an upgrade, a held request's send after approval), which
// the upstream receives as its traceparent.

t.setTimeout(600_000);
const engine = await routePolicies(t, { gated: [{ methods: ['POST'], paths: ['/api/payments'] }] }, OPEN_ACCESS);
t.teardown(() => engine.close());

const ACT = ['decisions:read', 'decisions:approve', 'decisions:execute', 'decisions:write'];
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const W3C = /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/;

async function tracedGateway(t: Test) {
  const receiver = await startOtlpReceiver(t);
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
  t.teardown(() => void delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT);
  const api = await startUpstream(t);
  // Drops the first connection to each target without answering, then answers 503.
  const tries: Record<string, number> = {};
  const flaky = await startUpstream(t, (req, res) => {
    tries[req.url!] = (tries[req.url!] ?? 0) + 1;
    if (tries[req.url!] === 1) return void req.socket.destroy();
    req.resume();
    req.on('end', () => res.writeHead(503).end('busy'));
  });
  const file = routesFile(tempDir(t), [
    { name: 'api', match: { pathPrefix: '/api' }, upstream: api.url, policy: 'route-access-v1', auth: 'api-key' },
    { name: 'flaky', match: { pathPrefix: '/flaky' }, upstream: flaky.url, policy: 'open-access-v1', auth: 'none', retry: { attempts: 2, backoffMs: 1 } },
    { name: 'down', match: { pathPrefix: '/down' }, upstream: `http://127.0.0.1:${await closedPort()}`, policy: 'open-access-v1', auth: 'none' },
  ]);
  const { url, admin, server } = await startTestServer(t, { policies: engine, proxy: { routesFile: file, port: 0 } });
  const requester = await issueKey(url, admin, { env: 'sandbox', scopes: ACT, roles: ['developer'], name: 'requester' });
  const approver = await issueKey(url, admin, { env: 'sandbox', scopes: ACT, roles: ['developer'], name: 'approver' });
  return { receiver, api, url, server, gateway: server.gateway!.url, requester, approver };
}

function spansOf(spans: OtlpSpan[]) {
  const children = (parent: OtlpSpan) => spans.filter((s) => s.parentSpanId === parent.spanId);
  const named = (name: string) => spans.filter((s) => s.name === name && s.kind === SPAN_KIND.server);
  return { children, named };
}

t.test('a forwarded request: a server span from the caller’s traceparent, a client span the upstream continues', async (t) => {
  const { receiver, api, server, gateway, requester } = await tracedGateway(t);
  const answer = await send(gateway, 'GET', '/api/orders/42?expand=items&access_token=abc', {
    headers: { authorization: `Bearer ${requester.key}`, traceparent: `00-${TRACE}-${CALLER_SPAN}-01`, tracestate: 'vendor=1' },
  });
  t.equal(answer.status, 200);
  const [entry] = await proxyEntries(server, 1);
  await server.close();

  const spans = receiver.spans().filter((s) => s.traceId === TRACE);
  const { children } = spansOf(spans);
  const request = spans.find((s) => s.parentSpanId === CALLER_SPAN);
  t.ok(request, 'the gateway request is a child of the caller’s span');
  t.match(request, { name: 'GET proxy:api', kind: SPAN_KIND.server });
  t.equal(attribute(request!, 'http.request.method'), 'GET');
  t.equal(attribute(request!, 'url.path'), '/api/orders/42');
  t.equal(attribute(request!, 'http.response.status_code'), 200);
  t.equal(attribute(request!, 'gatehouse.request_id'), entry!.requestId);
  t.not(request!.status?.code, STATUS_ERROR);

  const [upstreamCall, ...others] = children(request!);
  t.same(others, [], 'one exchange, one client span');
  t.match(upstreamCall, { name: 'GET', kind: SPAN_KIND.client });
  t.equal(attribute(upstreamCall!, 'http.request.method'), 'GET');
  t.equal(attribute(upstreamCall!, 'url.full'), `${api.url}/api/orders/42?expand=items&access_token=REDACTED`, 'the token in the query is not exported');
  t.equal(attribute(upstreamCall!, 'server.address'), '127.0.0.1');
  t.equal(attribute(upstreamCall!, 'server.port'), api.port);
  t.equal(attribute(upstreamCall!, 'http.response.status_code'), 200);
  t.equal(attribute(upstreamCall!, 'http.request.resend_count'), undefined, 'the first try is not a resend');
  const ns = (value: string) => BigInt(value);
  // The SDK anchors each span's clock to Date.now() when it starts, so two spans' times may be
  // out of step by up to a millisecond: within the request means within it to that millisecond.
  const ms = 1_000_000n;
  t.ok(ns(upstreamCall!.startTimeUnixNano) + ms >= ns(request!.startTimeUnixNano) && ns(upstreamCall!.endTimeUnixNano) <= ns(request!.endTimeUnixNano) + ms, 'the exchange lies within the request');

  const received = api.received[0]!.headers;
  t.equal(received['traceparent'], `00-${TRACE}-${upstreamCall!.spanId}-01`, 'the upstream’s parent is the client span');
  t.equal(received['tracestate'], 'vendor=1', 'the caller’s tracestate goes with the trace it belongs to');
  t.equal(entry!.traceparent, `00-${TRACE}-${request!.spanId}-01`, 'the audit entry names the gateway request’s span');
});

t.test('retries, refusals and failures: a client span per try, errors marked', async (t) => {
  const { receiver, server, gateway } = await tracedGateway(t);
  const retried = await send(gateway, 'GET', '/flaky/x');
  t.equal(retried.status, 503);
  const down = await send(gateway, 'GET', '/down/x', { headers: { traceparent: 'garbage' } });
  t.equal(down.status, 502);
  const refused = await send(gateway, 'GET', '/nowhere');
  t.equal(refused.status, 404);
  await server.close();

  const spans = receiver.spans();
  const { children, named } = spansOf(spans);
  const [flakyRequest] = named('GET proxy:flaky');
  t.ok(flakyRequest, 'the retried request has its span');
  t.notOk(flakyRequest!.parentSpanId, 'without a caller’s traceparent the request starts a trace');
  t.equal(flakyRequest!.status?.code, STATUS_ERROR, 'a 5xx answer is an error of the request');
  const tries = children(flakyRequest!);
  t.equal(tries.length, 2, 'a client span per try');
  t.equal(attribute(tries[0]!, 'error.type'), 'upstream_unavailable');
  t.equal(tries[0]!.status?.code, STATUS_ERROR);
  t.equal(attribute(tries[0]!, 'http.response.status_code'), undefined, 'the first try got no answer');
  t.equal(attribute(tries[1]!, 'http.request.resend_count'), 1);
  t.equal(attribute(tries[1]!, 'http.response.status_code'), 503);
  t.equal(attribute(tries[1]!, 'error.type'), '503', 'an error answer is an error of the client span');
  t.equal(tries[0]!.traceId, flakyRequest!.traceId);

  const [downRequest] = named('GET proxy:down');
  t.notOk(downRequest!.parentSpanId, 'a malformed traceparent is not continued');
  t.equal(attribute(downRequest!, 'http.response.status_code'), 502);
  const [unreachable] = children(downRequest!);
  t.equal(attribute(unreachable!, 'error.type'), 'upstream_unavailable');
  t.equal(unreachable!.status?.code, STATUS_ERROR);

  const [unmatched] = named('GET proxy:unmatched');
  t.equal(attribute(unmatched!, 'http.response.status_code'), 404, 'a refused request is traced too');
  t.not(unmatched!.status?.code, STATUS_ERROR, 'a 4xx answer is not an error of a server span');
  t.same(children(unmatched!), [], 'and never reached an upstream');
});

t.test('a held request’s send after approval is a client span under the request that was held', async (t) => {
  const { receiver, api, url, server, gateway, requester, approver } = await tracedGateway(t);
  const held = await send(gateway, 'POST', '/api/payments?dryRun=false', {
    headers: { authorization: `Bearer ${requester.key}`, 'content-type': 'application/json', traceparent: `00-${TRACE}-${CALLER_SPAN}-01` },
    body: '{"amount":1}',
  });
  t.equal(held.status, 202, held.body.toString());
  const id = held.json.id;
  t.equal((await call(url, 'POST', `/v1/decisions/${id}/approve`, { key: approver.key })).status, 200);
  t.equal((await call(url, 'POST', `/v1/decisions/${id}/execute`, { key: approver.key })).status, 200);
  const done = await settled(() => call(url, 'GET', `/v1/decisions/${id}/result`, { key: approver.key }));
  t.equal(done.json.state, 'complete', done.text);
  await server.close();

  const spans = receiver.spans().filter((s) => s.traceId === TRACE);
  const { children } = spansOf(spans);
  const hold = spans.find((s) => s.parentSpanId === CALLER_SPAN);
  t.match(hold, { name: 'POST proxy:api', kind: SPAN_KIND.server });
  t.equal(attribute(hold!, 'http.response.status_code'), 202);
  const [sending] = children(hold!);
  t.match(sending, { name: 'POST', kind: SPAN_KIND.client }, 'the send is under the request that was held');
  t.equal(attribute(sending!, 'gatehouse.decision_id'), id);
  t.equal(attribute(sending!, 'url.full'), `${api.url}/api/payments?dryRun=false`);
  t.equal(attribute(sending!, 'http.response.status_code'), 200);
  t.ok(BigInt(sending!.startTimeUnixNano) >= BigInt(hold!.endTimeUnixNano), 'sent after the hold was answered');
  t.equal(api.received.length, 1);
  t.equal(api.received[0]!.headers['traceparent'], `00-${TRACE}-${sending!.spanId}-01`, 'the upstream’s parent is the send’s span');
});

t.test('a WebSocket upgrade: one client span for the handshake', async (t) => {
  const { receiver, api, server, gateway, requester } = await tracedGateway(t);
  const upgrades = echoWebSockets(t, api);
  const ws = new WebSocket(gateway.replace('http:', 'ws:') + '/api/live', { headers: { authorization: `Bearer ${requester.key}`, traceparent: `00-${TRACE}-${CALLER_SPAN}-01` } });
  t.teardown(() => ws.terminate());
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  // A closing handshake, so the upstream's end of the connection closes too.
  await new Promise((resolve) => ws.close() ?? ws.once('close', resolve));
  await server.close();

  const spans = receiver.spans().filter((s) => s.traceId === TRACE);
  const upgrade = spans.find((s) => s.parentSpanId === CALLER_SPAN);
  t.match(upgrade, { name: 'GET proxy:api', kind: SPAN_KIND.server });
  const [handshake, ...others] = spansOf(spans).children(upgrade!);
  t.same(others, []);
  t.equal(attribute(handshake!, 'http.response.status_code'), 101);
  t.equal(upgrades[0]!['traceparent'], `00-${TRACE}-${handshake!.spanId}-01`);
});

t.test('without an OTLP endpoint the gateway passes the caller’s traceparent on unchanged', async (t) => {
  const receiver = await startOtlpReceiver(t);
  const api = await startUpstream(t);
  const file = routesFile(tempDir(t), [{ name: 'open', match: { pathPrefix: '/' }, upstream: api.url, policy: 'open-access-v1', auth: 'none' }]);
  const { server } = await startTestServer(t, { policies: engine, proxy: { routesFile: file, port: 0 } });
  const traceparent = `00-${TRACE}-${CALLER_SPAN}-01`;
  t.equal((await send(server.gateway!.url, 'GET', '/x', { headers: { traceparent } })).status, 200);
  const generated = await send(server.gateway!.url, 'GET', '/y');
  t.equal(generated.status, 200);
  await server.close();
  t.equal(api.received[0]!.headers['traceparent'], traceparent);
  t.match(api.received[1]!.headers['traceparent'], W3C, 'one is generated when none came');
  t.same(receiver.exports, [], 'no export');
});
