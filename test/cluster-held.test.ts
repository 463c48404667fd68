import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { call, issueKey, startTestServer, tempDir, type Answer, type TestServer } from './helpers/gatehouse.ts';
import { startNatsCluster, type NatsCluster } from './helpers/nats-cluster.ts';
import { routePolicies, routesFile, send, startUpstream, type Upstream } from './helpers/upstream.ts';

// Held work in cluster mode (docs/cluster.md, docs/proxy.md, docs/agents.md): a proxied request
// or an agent tool call held on instance A is released, or withdrawn, by the decision's action
// on instance B. Whichever instance commits the execute sends the request (or calls the tool);
// the outcome is replicated. Both instances run the gateway over the same routes file and
// upstream, on one real three-server NATS cluster; each test has a namespace of its own.

t.setTimeout(600_000);
// The bundled data gates only requests that must also be signed; gate one that need not be.
const engine = await routePolicies(t, { gated: [{ methods: ['POST'], paths: ['/api/payments'] }] });
t.teardown(() => engine.close());
const nats: NatsCluster = await startNatsCluster({ size: 3 });
t.teardown(() => nats.stop());

const ACT = ['decisions:read', 'decisions:approve', 'decisions:execute', 'decisions:write'];
const PAYMENT = JSON.stringify({ amount: 4200, to: 'acme' });
const PAY_SCHEMA = {
  type: 'object',
  properties: { amount: { type: 'number', minimum: 0 }, to: { type: 'string', minLength: 1 } },
  required: ['amount', 'to'],
  additionalProperties: false,
};

/** Polls `read` (bounded) until `done` accepts its answer, and returns that answer. */
async function until(what: string, read: () => Promise<Answer>, done: (answer: Answer) => boolean): Promise<Answer> {
  let answer = await read();
  for (let i = 0; i < 400 && !done(answer); i++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    answer = await read();
  }
  if (!done(answer)) throw new Error(`${what}: still ${answer.status} ${answer.text}`);
  return answer;
}

/** Resolves once `to` has applied every commit `from` had applied when called (bounded). */
async function synced(from: TestServer, to: TestServer): Promise<void> {
  const target = from.server.services.store.applied;
  for (let i = 0; i < 400 && to.server.services.store.applied < target; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  if (to.server.services.store.applied < target) throw new Error(`the other instance did not reach commit ${target}`);
}

/**
 * Two instances of one cluster with the gateway over one routes file to `proxied`, tools allowed
 * on 127.0.0.1, and the keys of a requester (through the gateway), an agent runner, an approver
 * granted the gated request, a reader and an operator, all issued on A and known to B.
 */
async function pair(t: Test, proxied: Upstream, tools: Upstream) {
  const namespace = `t${randomBytes(4).toString('hex')}`;
  const adminKey = `gh_live_${randomBytes(24).toString('base64url')}`;
  const routes = routesFile(tempDir(t), [{ name: 'payments', match: { pathPrefix: '/api' }, upstream: proxied.url, policy: 'route-access-v1', auth: 'api-key' }]);
  const start = (nodeId: string) =>
    startTestServer(t, {
      policies: engine,
      adminKey,
      cluster: { servers: nats.urls, namespace, nodeId },
      proxy: { routesFile: routes, port: 0 },
      toolAllow: ['127.0.0.1'],
    });
  const a = await start('a');
  const b = await start('b');
  // Each start registers a signing key for the shared admin secret, and the helpers sign with the
  // last one, B's: A accepts it once it has applied B's commit (the bound docs/cluster.md states).
  await synced(b, a);
  const requester = await issueKey(a.url, a.admin, { env: 'sandbox', scopes: ACT, roles: ['developer'], name: 'requester' });
  const approver = await issueKey(a.url, a.admin, { env: 'sandbox', scopes: ACT, roles: ['developer'], name: 'approver' });
  const reader = await issueKey(a.url, a.admin, { env: 'sandbox', scopes: ['decisions:read'], name: 'reader' });
  const runner = await issueKey(a.url, a.admin, { env: 'sandbox', scopes: ['agents:run'], name: 'runner' });
  const operator = await issueKey(a.url, a.admin, { env: 'sandbox', scopes: ['admin'], name: 'operator' });
  const tool = await call(a.url, 'POST', '/v1/agents/tools', {
    key: operator.key,
    body: { name: 'pay', description: 'pays', inputSchema: PAY_SCHEMA, upstream: { method: 'POST', url: `${tools.url}/pay` }, scopes: ['payments:write'], policy: 'agent-tools-v1', spendField: 'amount' },
  });
  if (tool.status !== 201) throw new Error(`registering the tool: ${tool.status} ${tool.text}`);
  const agent = await call(a.url, 'POST', '/v1/agents', { key: operator.key, body: { name: 'billing-bot', scopes: ['payments:write'], tools: ['pay'] } });
  if (agent.status !== 201) throw new Error(`registering the agent: ${agent.status} ${agent.text}`);
  await synced(a, b);

  const act = (server: TestServer, id: string, action: string) => call(server.url, 'POST', `/v1/decisions/${id}/${action}`, { key: approver.key });
  const result = (server: TestServer, id: string) => call(server.url, 'GET', `/v1/decisions/${id}/result`, { key: reader.key });
  /** A payment held by A's gateway: its 202. */
  const hold = async (requestId: string) => {
    const held = await send(a.server.gateway!.url, 'POST', '/api/payments', {
      headers: { authorization: `Bearer ${requester.key}`, 'content-type': 'application/json', 'x-request-id': requestId },
      body: PAYMENT,
    });
    if (held.status !== 202) throw new Error(`holding the request: ${held.status} ${held.body.toString()}`);
    return held.json;
  };
  /** A run opened on A and a tool call on it held for approval (1,000 and up is reviewed): its 202. */
  const holdCall = async (amount: number) => {
    const run = await call(a.url, 'POST', '/v1/agents/runs', { key: runner.key, body: { agentId: agent.json.id } });
    if (run.status !== 201) throw new Error(`opening a run: ${run.status} ${run.text}`);
    const held = await call(a.url, 'POST', `/v1/agents/runs/${run.json.id}/tool-calls`, { key: runner.key, body: { tool: 'pay', input: { amount, to: 'acme' } } });
    if (held.status !== 202) throw new Error(`holding the tool call: ${held.status} ${held.text}`);
    return { runId: run.json.id as string, ...held.json };
  };
  const trace = (server: TestServer, runId: string) => call(server.url, 'GET', `/v1/agents/runs/${runId}`, { key: runner.key });
  /** Resolves once neither instance is still sending a held request or calling a tool. */
  const idle = () => Promise.all([a, b].flatMap(({ server }) => [server.services.heldRequests.idle(), server.services.agents.calls.idle()]));
  return { a, b, requester, act, result, hold, holdCall, trace, idle };
}

const settled = (answer: Answer) => answer.json?.state !== 'held' && answer.json?.state !== 'pending';
const stepSettled = (answer: Answer) => !['held', 'executing'].includes(answer.json?.steps?.[0]?.state);

t.test('a request held on A is sent once when its decision is approved and executed on B; both read its outcome', async (t) => {
  const proxied = await startUpstream(t);
  const tools = await startUpstream(t);
  const { a, b, requester, act, result, hold, idle } = await pair(t, proxied, tools);
  const held = await hold('pay-1');
  t.match(held, { status: 'created', gate: 'human_approval', nextAction: 'approve', subject: { type: 'proxy-request' }, createdBy: requester.id });
  await synced(a, b);
  t.match((await result(b, held.id)).json, { decisionId: held.id, state: 'held', request: { route: 'payments', method: 'POST', target: '/api/payments' } }, 'B holds the request A held');

  const approved = await act(b, held.id, 'approve');
  t.equal(approved.status, 200, approved.text);
  const executed = await act(b, held.id, 'execute');
  t.equal(executed.status, 200, executed.text);
  t.equal(executed.json.status, 'executed');

  const onB = await until('the result on B', () => result(b, held.id), settled);
  t.equal(onB.json.state, 'complete', onB.text);
  t.match(onB.json.response, { status: 200, truncated: false, headers: { 'x-upstream': 'yes' } }, "the upstream's status is kept");
  await synced(b, a);
  const onA = await result(a, held.id);
  t.equal(onA.status, 200, onA.text);
  t.same(onA.json, onB.json, 'A reads the same outcome');

  await idle();
  t.equal(proxied.received.length, 1, 'sent exactly once');
  const sent = proxied.received[0]!;
  t.equal(sent.url, '/api/payments');
  t.equal(sent.body.toString(), PAYMENT, 'the body as held on A');
  t.equal(sent.headers['x-request-id'], 'pay-1');
  t.equal(sent.headers['authorization'], undefined, 'the key is not sent');
  const sentEntries = [...a.server.services.audit.all()].filter((e) => e.decisionId === held.id && e.proxy?.outcome === 'sent');
  t.match(sentEntries, [{ route: 'proxy:payments', status: 200, proxy: { upstreamStatus: 200 } }], "the send is on the cluster's audit chain, as A holds it");
});

t.test('a tool call held on A is executed once when its decision is executed on B; both hold the same steps', async (t) => {
  const proxied = await startUpstream(t);
  const tools = await startUpstream(t);
  const { a, b, act, holdCall, trace, idle } = await pair(t, proxied, tools);
  const held = await holdCall(4000);
  t.match(held, { status: 'created', gate: 'human_approval', subject: { type: 'agent-tool-call', id: held.callId } });
  await synced(a, b);
  t.equal((await trace(b, held.runId)).json.steps[0]?.state, 'held', 'B holds the call A held');

  t.equal((await act(b, held.id, 'approve')).status, 200, 'approved on B');
  const executed = await act(b, held.id, 'execute');
  t.equal(executed.status, 200, executed.text);

  const onB = await until('the step on B', () => trace(b, held.runId), stepSettled);
  t.match(onB.json.steps[0], { state: 'executed', decisionId: held.id, response: { status: 200 }, approval: { status: 'executed' } });
  await synced(b, a);
  const onA = await trace(a, held.runId);
  t.same(onA.json, onB.json, 'A holds the same run: steps, approvals and counters');
  t.match(onA.json, { calls: 1, spend: 4000, byState: { executed: 1, held: 0, executing: 0 } });

  await idle();
  t.equal(tools.received.length, 1, 'the tool was called exactly once');
  t.same(JSON.parse(tools.received[0]!.body.toString()), { amount: 4000, to: 'acme' });
  t.equal(proxied.received.length, 0);
});

t.test('rejecting on B withdraws the request and the tool call held on A: never sent', async (t) => {
  const proxied = await startUpstream(t);
  const tools = await startUpstream(t);
  const { a, b, act, result, hold, holdCall, trace, idle } = await pair(t, proxied, tools);
  const request = await hold('pay-2');
  const toolCall = await holdCall(2000);
  await synced(a, b);
  for (const id of [request.id, toolCall.id]) {
    const rejected = await act(b, id, 'reject');
    t.equal(rejected.status, 200, rejected.text);
  }
  await synced(b, a);
  t.equal((await result(a, request.id)).json.state, 'withdrawn', 'A sees the request withdrawn');
  t.equal((await trace(a, toolCall.runId)).json.steps[0].state, 'withdrawn', 'A sees the call withdrawn');
  for (const id of [request.id, toolCall.id]) {
    const late = await act(a, id, 'execute');
    t.equal(late.status, 409, `executing ${id} on A afterwards is refused`);
  }
  await idle();
  t.equal(proxied.received.length, 0, 'the request was never sent');
  t.equal(tools.received.length, 0, 'the tool was never called');
});

t.test('executing one held decision on A and on B at once: one 200, one 409, sent once', async (t) => {
  const proxied = await startUpstream(t);
  const tools = await startUpstream(t);
  const { a, b, act, result, hold, holdCall, trace, idle } = await pair(t, proxied, tools);
  const ROUNDS = 6;
  for (let i = 0; i < ROUNDS; i++) {
    const request = await hold(`race-${i}`);
    const toolCall = await holdCall(1000 + i);
    for (const id of [request.id, toolCall.id]) t.equal((await act(a, id, 'approve')).status, 200, `round ${i}: approved on A`);
    await synced(a, b);
    for (const [what, id] of [['request', request.id], ['tool call', toolCall.id]] as const) {
      // Each round another instance's request leaves first.
      const [first, second] = i % 2 ? [b, a] : [a, b];
      const both = await Promise.all([act(first, id, 'execute'), act(second, id, 'execute')]);
      const on = (x: Answer) => (both.indexOf(x) === 0) === (first === a) ? 'A' : 'B';
      t.same(both.map((x) => x.status).sort(), [200, 409], `round ${i}, ${what}: one execute applies (${both.map((x) => `${on(x)} ${x.status}`).join(', ')})`);
      // The loser either lost the race to publish (conflict) or was worked out again on the
      // executed decision (invalid_transition).
      t.match(both.find((x) => x.status === 409)?.json, { code: /^(conflict|invalid_transition)$/ }, `round ${i}, ${what}: the loser is told why`);
    }
    for (const server of [a, b]) {
      t.equal((await until('the result', () => result(server, request.id), settled)).json.state, 'complete', `round ${i}: the request is complete on ${server === a ? 'A' : 'B'}`);
      t.equal((await until('the step', () => trace(server, toolCall.runId), stepSettled)).json.steps[0].state, 'executed', `round ${i}: the call is executed on ${server === a ? 'A' : 'B'}`);
    }
  }
  await idle();
  const requestIds = proxied.received.map((r) => r.headers['x-request-id']);
  t.same(requestIds.sort(), Array.from({ length: ROUNDS }, (_, i) => `race-${i}`).sort(), 'each held request reached the upstream exactly once');
  const amounts = tools.received.map((r) => JSON.parse(r.body.toString()).amount as number);
  t.same(amounts.sort(), Array.from({ length: ROUNDS }, (_, i) => 1000 + i), 'each held tool call reached its tool exactly once');
});
