import type { IncomingMessage, ServerResponse } from 'node:http';
import t from 'tap';
import { contextValues, type DecisionRecord } from '../core/decision.ts';
import { policyInput, UNSIGNED } from '../core/policy-input.ts';
import type { Principal } from '../core/principal.ts';
import { repeatedMember } from '../proxy/http/json-members.ts';
import { call, issueKey, startTestServer } from './helpers/gatehouse.ts';
import { bundledEngine } from './helpers/policies.ts';
import { startUpstream, type Received } from './helpers/upstream.ts';

// A name given twice where the server keeps one value per name would hide the other value from
// the policy, the record and whoever is sent the request: each is refused with 400 naming it, so
// what a policy judges is what is stored (docs/security.md, "Repeated names").

t.setTimeout(300_000);
const engine = await bundledEngine();
const { url, admin } = await startTestServer(t, { policies: engine, toolAllow: ['127.0.0.1'] });
const writer = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:write', 'decisions:read', 'memory:write', 'memory:read'] });

function raw(path: string, text: string, key = writer.key) {
  return call(url, 'POST', path, { key, raw: text, headers: { 'content-type': 'application/json' } });
}

t.test('a context naming a source twice is refused, and nothing is stored', async (t) => {
  const answer = await call(url, 'POST', '/v1/decisions', {
    key: writer.key,
    body: {
      title: 'Buy the building',
      policy: 'spend-approval-v1',
      context: [
        { source: 'finance:amount', value: 900000 },
        { source: 'ops:urgency', value: 1 },
        { source: 'finance:amount', value: 5 },
      ],
    },
  });
  t.equal(answer.status, 400);
  t.match(answer.json, {
    code: 'invalid_request',
    detail: 'context names finance:amount twice (items 0 and 2): give each source once',
    errors: [{ path: 'body/context/2/source' }],
  });
  const listed = await call(url, 'GET', '/v1/decisions', { key: writer.key });
  t.same(listed.json.data, [], 'no decision was stored');

  const once = await call(url, 'POST', '/v1/decisions', {
    key: writer.key,
    body: { title: 'Buy the building', policy: 'spend-approval-v1', context: [{ source: 'finance:amount', value: 900000 }] },
  });
  t.equal(once.status, 200, 'the same amount given once is judged');
  t.match(once.json, { gate: 'human_approval', nextAction: 'approve', requiredApprovals: { count: 2 } });
});

t.test('a label repeated in inputs, or an objective given twice, is refused, naming it', async (t) => {
  const inputs = await call(url, 'POST', '/v1/decisions', {
    key: writer.key,
    body: { title: 'Deploy', policy: 'decision-gate-v1', context: 'routine', inputs: ['repo:web', 'repo:api', 'repo:web'] },
  });
  t.equal(inputs.status, 400);
  t.match(inputs.json, { code: 'invalid_request', errors: [{ path: 'body/inputs', message: /"repo:web" is given twice/ }] });
  const objectives = await call(url, 'POST', '/v1/decisions', {
    key: writer.key,
    body: { title: 'Deploy', policy: 'decision-gate-v1', context: 'routine', objectives: ['ship the fix', 'ship the fix'] },
  });
  t.equal(objectives.status, 400);
  t.match(objectives.json, { code: 'invalid_request', errors: [{ path: 'body/objectives', message: /"ship the fix" is given twice/ }] });
});

t.test('a member named twice in one JSON object is refused wherever it is', async (t) => {
  const title = await raw('/v1/decisions', '{"title":"a","policy":"decision-gate-v1","context":"x","title":"b"}');
  t.equal(title.status, 400);
  t.match(title.json, { code: 'invalid_request', errors: [{ path: 'body/title' }] });

  const escaped = await raw('/v1/decisions', '{"title":"a","policy":"decision-gate-v1","context":[{"source":"risk:score","value":90,"\\u0076alue":1}]}');
  t.equal(escaped.status, 400, 'names compare as decoded');
  t.match(escaped.json, { errors: [{ path: 'body/context/0/value' }] });

  const attributes = await raw('/v1/memory', '{"namespace":"finance","text":"the Q3 budget","attributes":{"risk":"high","owner":"cfo","risk":"low"}}');
  t.equal(attributes.status, 400, 'memory attributes');
  t.match(attributes.json, { errors: [{ path: 'body/attributes/risk' }] });
  const items = await call(url, 'POST', '/v1/memory/query', { key: writer.key, body: { query: 'the Q3 budget' } });
  t.same(
    items.json.results.filter((item: { text: string }) => item.text === 'the Q3 budget'),
    [],
    'nothing was written',
  );
});

t.test("a tool call's input naming a member twice never reaches the tool", async (t) => {
  const upstream = await startUpstream(t, (req: IncomingMessage, res: ServerResponse, received: Received[]) => {
    received.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.alloc(0) });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  const operator = await issueKey(url, admin, { env: 'sandbox', scopes: ['admin'] });
  const runner = await issueKey(url, admin, { env: 'sandbox', scopes: ['agents:run'] });
  const tool = await call(url, 'POST', '/v1/agents/tools', {
    key: operator.key,
    body: {
      name: 'pay',
      description: 'pays',
      inputSchema: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
      upstream: { method: 'POST', url: `${upstream.url}/pay` },
      scopes: [],
      policy: 'agent-tools-v1',
      spendField: 'amount',
    },
  });
  t.equal(tool.status, 201, 'tool registered');
  const agent = await call(url, 'POST', '/v1/agents', { key: operator.key, body: { name: 'buyer', scopes: [], tools: ['pay'] } });
  t.equal(agent.status, 201, 'agent registered');
  const run = await call(url, 'POST', '/v1/agents/runs', { key: runner.key, body: { agentId: agent.json.id } });
  t.equal(run.status, 201, 'run opened');

  const answer = await raw(`/v1/agents/runs/${run.json.id}/tool-calls`, '{"tool":"pay","input":{"amount":900000,"amount":5}}', runner.key);
  t.equal(answer.status, 400);
  t.match(answer.json, { code: 'invalid_request', errors: [{ path: 'body/input/amount' }] });
  const trace = await call(url, 'GET', `/v1/agents/runs/${run.json.id}`, { key: runner.key });
  t.equal(trace.json.calls, 0, 'no step was recorded');
  t.equal(upstream.received.length, 0, 'the tool was never called');
});

t.test('a query parameter given twice is refused, naming it', async (t) => {
  const answer = await call(url, 'GET', '/v1/decisions?status=created&limit=5&status=approved', { key: writer.key });
  t.equal(answer.status, 400);
  t.match(answer.json, { code: 'invalid_request', detail: /status twice/, errors: [{ path: 'query/status' }] });
});

t.test('a decision stored with a repeated source before the rule: the policy sees every value', async (t) => {
  const context = [
    { source: 'risk:score', value: 90 },
    { source: 'finance:amount', value: 900000 },
    { source: 'risk:score', value: 5 },
    { source: 'finance:amount', value: 5 },
  ];
  t.same(contextValues(context), { 'finance:amount': [900000, 5], 'risk:score': [90, 5] }, 'listed in order');
  const principal: Principal = { keyId: 'key_a', env: 'sandbox', scopes: ['decisions:write', 'decisions:execute'], roles: [] };
  const stored = (policy: string) =>
    ({ id: 'dec_legacy', env: 'sandbox', title: 'legacy', policy, context, inputs: [], objectives: [], status: 'created', approvals: [], createdBy: 'key_a', createdAt: '2025-01-01T00:00:00Z' }) as unknown as DecisionRecord;
  const request = { method: 'POST', path: '/v1/decisions/dec_legacy/execute', signature: UNSIGNED };

  const gate = engine.evaluate('decision-gate-v1', policyInput('execute', stored('decision-gate-v1'), principal, request)).value as { allow: boolean; reasons: string[] };
  t.equal(gate.allow, false, 'decision-gate-v1 gates on the highest risk value: execution needs an approval');
  t.match(gate.reasons, [/execution needs 1 approval/]);
  const spend = engine.evaluate('spend-approval-v1', policyInput('execute', stored('spend-approval-v1'), principal, request)).value as { allow: boolean; reasons: string[] };
  t.equal(spend.allow, false, 'spend-approval-v1 finds no single amount and denies');
  t.ok(spend.reasons.includes('the context must carry a numeric finance:amount'), 'and says why');
});

t.test('repeatedMember names the first member given twice, at its JSON Pointer', async (t) => {
  const cases: Array<[string, object | null]> = [
    ['{"a":1,"b":{"c":[1,{"d":2}]}}', null],
    ['{"a":1,"a":2}', { pointer: '/a', name: 'a' }],
    ['{"l":[{"s":1},{"s":2,"s":3}]}', { pointer: '/l/1/s', name: 's' }],
    ['[1,{"a/b~":1,"a/b~":2}]', { pointer: '/1/a~1b~0', name: 'a/b~' }],
    ['{"x":{"a":1,"\\u0061":2}}', { pointer: '/x/a', name: 'a' }],
    ['{"k:1":"v:\\"a\\":1","k:2":{}}', null],
    ['{"__proto__":1,"__proto__":2}', { pointer: '/__proto__', name: '__proto__' }],
  ];
  for (const [text, expected] of cases) t.same(repeatedMember(text, JSON.parse(text)), expected, text);
});
