import t from 'tap';
import { call, issueKey, startTestServer } from './helpers/gatehouse.ts';
import { attribute, SPAN_KIND, startOtlpReceiver } from './helpers/otlp-receiver.ts';
import { bundledEngine } from './helpers/policies.ts';
import { startUpstream } from './helpers/upstream.ts';

// Agents' tool calls in traces, exported over OTLP/HTTP to a receiver on 127.0.0.1: each exchange
// with a tool is a client span in the trace of the request that made the call (also when it is
// sent after an approval), and the tool receives it as its traceparent.

t.setTimeout(300_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const PAY_SCHEMA = { type: 'object', properties: { amount: { type: 'number' }, to: { type: 'string' } }, required: ['amount', 'to'], additionalProperties: false };

t.test('a tool call\'s exchange is a client span of the calling request\'s trace, before and after an approval', async (t) => {
  const receiver = await startOtlpReceiver(t);
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
  t.teardown(() => void delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT);
  const tool = await startUpstream(t, (req, res, received) => {
    received.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.alloc(0) });
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"paid":true}'));
  });
  const { url, admin, server } = await startTestServer(t, { policies: engine, toolAllow: ['127.0.0.1'] });
  const operator = await issueKey(url, admin, { env: 'sandbox', scopes: ['admin'], name: 'operator' });
  const runner = await issueKey(url, admin, { env: 'sandbox', scopes: ['agents:run'], name: 'runner' });
  const reviewer = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:approve', 'decisions:execute'], name: 'reviewer' });
  const made = await call(url, 'POST', '/v1/agents/tools', {
    key: operator.key,
    body: { name: 'pay', description: 'pays', inputSchema: PAY_SCHEMA, upstream: { method: 'POST', url: `${tool.url}/pay?token=s3cret` }, scopes: ['payments:write'], policy: 'agent-tools-v1', spendField: 'amount' },
  });
  t.equal(made.status, 201, made.text);
  const agent = await call(url, 'POST', '/v1/agents', { key: operator.key, body: { name: 'bot', scopes: ['payments:write'], tools: ['pay'] } });
  const run = await call(url, 'POST', '/v1/agents/runs', { key: runner.key, body: { agentId: agent.json.id } });
  const traceparent = (span: string) => ({ traceparent: `00-${TRACE}-${span}-01` });

  const allowed = await call(url, 'POST', `/v1/agents/runs/${run.json.id}/tool-calls`, { key: runner.key, body: { tool: 'pay', input: { amount: 5, to: 'acme' } }, headers: traceparent(CALLER_SPAN) });
  t.equal(allowed.status, 200, allowed.text);
  const held = await call(url, 'POST', `/v1/agents/runs/${run.json.id}/tool-calls`, { key: runner.key, body: { tool: 'pay', input: { amount: 4000, to: 'acme' } }, headers: traceparent('00f067aa0ba902b8') });
  t.equal(held.status, 202, held.text);
  t.equal((await call(url, 'POST', `/v1/decisions/${held.json.id}/approve`, { key: reviewer.key, body: {} })).status, 200);
  t.equal((await call(url, 'POST', `/v1/decisions/${held.json.id}/execute`, { key: reviewer.key, body: {} })).status, 200);
  for (let i = 0; i < 100 && tool.received.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
  await server.close();

  const clients = receiver.spans().filter((s) => s.kind === SPAN_KIND.client && s.traceId === TRACE);
  t.equal(clients.length, 2, 'one client span per exchange, both in the callers\' trace');
  const [first, second] = ['00f067aa0ba902b7', '00f067aa0ba902b8'].map((parent) => clients.find((s) => s.parentSpanId === parent)!);
  t.ok(first && second, 'each under the request that made its call, the second sent after the approval');
  for (const [span, callId] of [[first!, allowed.json.call.id], [second!, held.json.callId]] as const) {
    t.equal(span.name, 'POST');
    t.equal(attribute(span, 'gatehouse.agent.tool'), 'pay');
    t.equal(attribute(span, 'gatehouse.agent.run_id'), run.json.id);
    t.equal(attribute(span, 'gatehouse.agent.call_id'), callId);
    t.equal(attribute(span, 'http.response.status_code'), 200);
    t.equal(attribute(span, 'url.full'), `${tool.url}/pay?token=REDACTED`, 'a secret in the tool\'s query is redacted');
  }
  t.same(
    tool.received.map((r) => r.headers['traceparent']),
    [first, second].map((s) => `00-${TRACE}-${s!.spanId}-01`),
    'the tool receives each exchange\'s span as its traceparent',
  );
});
