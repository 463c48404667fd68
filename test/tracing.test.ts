import t from 'tap';
import { bundledEngine } from './helpers/policies.ts';
import { call, issueKey, startTestServer } from './helpers/gatehouse.ts';
import { attribute, startOtlpReceiver } from './helpers/otlp-receiver.ts';

// OpenTelemetry traces exported over OTLP/HTTP to a receiver started here on 127.0.0.1: the
// request's span continues the caller's traceparent, with a span per stage and the policy
// evaluation's under its stage.

t.setTimeout(600_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

t.test('a decision request is traced from the caller’s traceparent through its stages', async (t) => {
  const receiver = await startOtlpReceiver(t);
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
  t.teardown(() => void delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT);
  const { url, admin, server } = await startTestServer(t, { policies: engine });
  const creator = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:write', 'decisions:read'] });
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const callerSpan = '00f067aa0ba902b7';
  const created = await call(url, 'POST', '/v1/decisions', {
    key: creator.key,
    body: { title: 'Deploy', policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 90 }] },
    headers: { traceparent: `00-${traceId}-${callerSpan}-01` },
  });
  t.equal(created.status, 200, created.text);
  await server.close();

  t.ok(receiver.exports.length > 0, 'the spans were exported when the server closed');
  t.match(receiver.exports[0]!.contentType, /application\/json/);
  t.same(receiver.exports[0]!.service, { stringValue: 'gatehouse' });
  const spans = receiver.exports.flatMap((e) => e.spans).filter((s) => s.traceId === traceId);
  const root = spans.find((s) => s.parentSpanId === callerSpan);
  t.ok(root, 'the request span is a child of the caller’s span');
  t.equal(root!.name, 'POST /v1/decisions');
  t.equal(root!.kind, 2, 'a server span');
  t.equal(attribute(root!, 'http.response.status_code'), 200);
  t.equal(attribute(root!, 'gatehouse.request_id'), created.headers.get('request-id'));
  const stages = spans.filter((s) => s.parentSpanId === root!.spanId);
  t.same(
    stages.map((s) => s.name),
    ['authenticate', 'verify-signature', 'rate-limit', 'validate', 'idempotency', 'policy', 'handler', 'commit', 'emit'],
    'a span per stage, in order',
  );
  const ns = (value: string) => BigInt(value);
  t.ok(stages.every((s) => ns(s.startTimeUnixNano) >= ns(root!.startTimeUnixNano) && ns(s.endTimeUnixNano) <= ns(root!.endTimeUnixNano)), 'stages lie within the request');
  const policy = stages.find((s) => s.name === 'policy')!;
  const evaluation = spans.find((s) => s.parentSpanId === policy.spanId);
  t.equal(evaluation?.name, 'policy.evaluate');
  t.equal(attribute(evaluation!, 'gatehouse.policy'), 'decision-gate-v1');
  t.equal(attribute(evaluation!, 'gatehouse.policy.allow'), true);
  t.equal(attribute(evaluation!, 'gatehouse.policy.gate'), 'human_approval');
  t.equal(spans.filter((s) => s.parentSpanId === undefined || s.parentSpanId === '').length, 0, 'nothing of this trace is left without a parent');
});

t.test('without an OTLP endpoint nothing is traced', async (t) => {
  const receiver = await startOtlpReceiver(t);
  const { url, admin, server } = await startTestServer(t, { policies: engine });
  await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  await server.close();
  t.same(receiver.exports, [], 'no export');
});
