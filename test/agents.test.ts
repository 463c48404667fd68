import type { IncomingMessage, ServerResponse } from 'node:http';
import t, { type Test } from 'tap';
import { call, issueKey, startTestServer, type Answer } from './helpers/gatehouse.ts';
import { openStream } from './helpers/stream-client.ts';
import { routePolicies, startUpstream, type Received, type Upstream } from './helpers/upstream.ts';

// Governed agents end to end: real tool upstreams on 127.0.0.1, the bundled agent-tools-v1
// policy (plus a stricter test-only agent-tools-v2 for replay), real keys, real decisions.

t.setTimeout(600_000);
const V2 = `package gatehouse.agent_tools.v2

default allow := false

allow if not input.input.amount > 100

gate := "auto"

reasons contains "agent-tools-v2 refuses amounts above 100" if input.input.amount > 100
`;
const engine = await routePolicies(t, {}, { 'agent-tools-v2.rego': V2 });
t.teardown(() => engine.close());

/** A tool upstream: records every request; `/fail…` paths answer 500, `/slow…` after 300 ms, everything else 200 JSON at once. */
async function toolUpstream(t: Test): Promise<Upstream> {
  return startUpstream(t, (req: IncomingMessage, res: ServerResponse, received: Received[]) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      received.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const failing = req.url!.startsWith('/fail');
      setTimeout(
        () => {
          res.writeHead(failing ? 500 : 200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ ok: !failing, path: req.url, got: JSON.parse(body.toString() || 'null') }));
        },
        req.url!.startsWith('/slow') ? 300 : 0,
      );
    });
  });
}

const PAY_SCHEMA = {
  type: 'object',
  properties: { amount: { type: 'number', minimum: 0 }, to: { type: 'string', minLength: 1 } },
  required: ['amount', 'to'],
  additionalProperties: false,
};

// The long run sends 300 calls as fast as the server answers: the sandbox rate limit (tested in
// test/rate-limit.test.ts) is lifted so the test does not depend on the machine's speed.
const UNLIMITED = { sandbox: { ratePerSecond: 1e6, burst: 1e6 } };

async function setup(t: Test) {
  const upstream = await toolUpstream(t);
  const { url, admin } = await startTestServer(t, { policies: engine, toolAllow: ['127.0.0.1'], rateLimits: UNLIMITED });
  const operator = await issueKey(url, admin, { env: 'sandbox', scopes: ['admin'], name: 'operator' });
  const runner = await issueKey(url, admin, { env: 'sandbox', scopes: ['agents:run', 'stream:subscribe'], name: 'runner' });
  const other = await issueKey(url, admin, { env: 'sandbox', scopes: ['agents:run'], name: 'other runner' });
  const approver = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read', 'decisions:approve', 'decisions:execute'], name: 'approver' });
  const tool = (body: Record<string, unknown>) => call(url, 'POST', '/v1/agents/tools', { key: operator.key, body });
  const payTool = (name: string, path: string, extra: Record<string, unknown> = {}) =>
    tool({
      name,
      description: `pays (${path})`,
      inputSchema: PAY_SCHEMA,
      upstream: { method: 'POST', url: `${upstream.url}${path}` },
      scopes: ['payments:write'],
      policy: 'agent-tools-v1',
      spendField: 'amount',
      ...extra,
    });
  const agent = (body: Record<string, unknown>) => call(url, 'POST', '/v1/agents', { key: operator.key, body });
  const openRun = (agentId: string, limits?: Record<string, number>, key = runner.key) => call(url, 'POST', '/v1/agents/runs', { key, body: limits ? { agentId, limits } : { agentId } });
  const toolCall = (runId: string, toolName: string, input: Record<string, unknown>, key = runner.key) =>
    call(url, 'POST', `/v1/agents/runs/${runId}/tool-calls`, { key, body: { tool: toolName, input } });
  const trace = (runId: string, key = runner.key) => call(url, 'GET', `/v1/agents/runs/${runId}`, { key });
  return { url, upstream, operator, runner, other, approver, tool, payTool, agent, openRun, toolCall, trace };
}

function ok(t: Test, answer: Answer, status: number, what: string) {
  t.equal(answer.status, status, what, answer.status === status ? {} : { body: answer.json ?? answer.text });
}

t.test('allowed calls run the tool, denied ones are refused with reasons, and each stage is an event', async (t) => {
  const s = await setup(t);
  ok(t, await s.payTool('pay', '/pay'), 201, 'register pay');
  const listed = await call(s.url, 'GET', '/v1/agents/tools', { key: s.runner.key });
  t.same(listed.json.data.map((x: { name: string }) => x.name), ['pay']);
  const agent = await s.agent({ name: 'billing-bot', scopes: ['payments:write'], tools: ['pay'] });
  ok(t, agent, 201, 'register agent');
  const run = await s.openRun(agent.json.id);
  ok(t, run, 201, 'open run');
  t.match(run.json, { state: 'open', limits: { maxToolCalls: 50, maxSpend: 10000 } });

  const stream = await openStream(t, s.url, s.runner.key);
  stream.send({ type: 'subscribe', topics: [`agents/${agent.json.id}`] });
  await stream.next((m) => m.type === 'subscribed');

  const done = await s.toolCall(run.json.id, 'pay', { amount: 25, to: 'acme' });
  ok(t, done, 200, 'allowed call');
  t.match(done.json, { call: { state: 'executed', index: 1, policy: { name: 'agent-tools-v1', allow: true, gate: 'auto' }, response: { status: 200 } }, result: { ok: true, got: { amount: 25, to: 'acme' } } });
  t.equal(s.upstream.received.length, 1, 'the tool was called once');
  t.equal(s.upstream.received[0]!.headers['content-type'], 'application/json');
  t.same(JSON.parse(s.upstream.received[0]!.body.toString()), { amount: 25, to: 'acme' });

  const kinds = ['agent.tool_call.requested', 'agent.tool_call.allowed', 'agent.tool_call.executed'];
  for (const kind of kinds) {
    const event = await stream.next((m) => m.type === 'event' && m.kind === kind);
    t.match(event.data, { runId: run.json.id, callId: done.json.call.id, tool: 'pay' }, kind);
  }

  // 9,990 more would pass the agent's budget of 10,000 (the run's own limit is higher).
  const big = await s.openRun(agent.json.id, { maxSpend: 100000 });
  await s.toolCall(big.json.id, 'pay', { amount: 500, to: 'acme' });
  const denied = await s.toolCall(big.json.id, 'pay', { amount: 9990, to: 'acme' });
  ok(t, denied, 403, 'over budget');
  t.equal(denied.json.code, 'policy_denied');
  t.same(denied.json.reasons, ["spending 9990 would bring the run to 10490, over the agent's budget of 10000"]);
  t.equal(s.upstream.received.length, 2, 'a denied call reaches no tool');
  await stream.next((m) => m.type === 'event' && m.kind === 'agent.tool_call.denied' && m.data.callId === denied.json.callId);

  const traced = await s.trace(big.json.id);
  t.same(traced.json.steps.map((x: { state: string }) => x.state), ['executed', 'denied']);
  t.match(traced.json.steps[1], { policyInput: { action: 'tool_call', run: { spend: 500, calls: 1 }, input: { amount: 9990 } }, policy: { allow: false, moduleHash: /^sha256:[0-9a-f]{64}$/ } });
});

t.test('schema-invalid input is 400 naming the JSON pointer, and reaches neither policy nor tool', async (t) => {
  const s = await setup(t);
  await s.payTool('pay', '/pay');
  const agent = await s.agent({ name: 'bot', scopes: ['payments:write'], tools: ['pay'] });
  const run = await s.openRun(agent.json.id);
  const bad = await s.toolCall(run.json.id, 'pay', { amount: 'ten', to: 'acme' });
  ok(t, bad, 400, 'bad input');
  t.equal(bad.json.code, 'invalid_request');
  t.match(bad.json.errors, [{ pointer: '/input/amount', keyword: 'type' }]);
  const extra = await s.toolCall(run.json.id, 'pay', { amount: 1, to: 'acme', memo: 'x' });
  t.match(extra.json.errors, [{ pointer: '/input', keyword: 'additionalProperties' }]);
  t.equal(s.upstream.received.length, 0);
  t.same((await s.trace(run.json.id)).json.steps, [], 'no step recorded');

  const invalidSchema = await s.tool({ name: 'broken', description: '', inputSchema: { type: 'object', properties: { a: { type: 'nonsense' } } }, upstream: { method: 'POST', url: s.upstream.url }, scopes: [], policy: 'agent-tools-v1' });
  ok(t, invalidSchema, 400, 'invalid inputSchema');
  t.match(invalidSchema.json.detail, /inputSchema is not a valid JSON Schema/);
  const unknownPolicy = await s.payTool('pay2', '/pay', { policy: 'agent-tools-v9' });
  ok(t, unknownPolicy, 422, 'unknown policy');
  t.equal(unknownPolicy.json.code, 'unknown_policy');
});

t.test('tool endpoints pass the SSRF guard unless the operator allows them', async (t) => {
  const { url, admin } = await startTestServer(t, { policies: engine });
  const operator = await issueKey(url, admin, { env: 'sandbox', scopes: ['admin'], name: 'operator' });
  const register = (name: string, upstream: string, compensate = 'http://8.8.8.8/undo') =>
    call(url, 'POST', '/v1/agents/tools', {
      key: operator.key,
      body: { name, description: '', inputSchema: { type: 'object' }, upstream: { method: 'POST', url: upstream }, compensate: { method: 'POST', url: compensate }, scopes: [], policy: 'agent-tools-v1' },
    });
  for (const target of ['http://127.0.0.1:9/pay', 'http://2130706433/', 'http://[::ffff:7f00:1]/', 'http://169.254.169.254/latest/meta-data', 'http://[64:ff9b::a00:1]/', 'http://[2002:c0a8:101::]/']) {
    const refused = await register('pay', target);
    ok(t, refused, 400, `${target} refused`);
    t.match(refused.json, { code: 'invalid_request', errors: [{ path: 'body/upstream/url', message: /not a public address.*GATEHOUSE_TOOL_ALLOW/ }] });
  }
  const compensate = await register('pay', 'http://8.8.8.8/pay', 'http://[fd00::1]/undo');
  ok(t, compensate, 400, 'the compensating endpoint too');
  t.match(compensate.json.errors, [{ path: 'body/compensate/url' }]);
  t.equal((await call(url, 'GET', '/v1/agents/tools', { key: operator.key })).json.data.length, 0, 'nothing registered');
});

t.test('scope escapes are refused', async (t) => {
  const s = await setup(t);
  await s.payTool('pay', '/pay');
  await s.tool({ name: 'lookup', description: 'reads', inputSchema: { type: 'object' }, upstream: { method: 'POST', url: `${s.upstream.url}/lookup` }, scopes: [], policy: 'agent-tools-v1' });
  const wide = await s.agent({ name: 'reader', scopes: [], tools: ['pay'] });
  ok(t, wide, 403, 'agent listing a tool outside its scopes');
  t.match(wide.json, { code: 'forbidden', tool: 'pay', missing: ['payments:write'] });
  const notAdmin = await call(s.url, 'POST', '/v1/agents', { key: s.runner.key, body: { name: 'x', scopes: [], tools: [] } });
  ok(t, notAdmin, 403, 'registering needs admin');

  const reader = await s.agent({ name: 'reader', scopes: [], tools: ['lookup'] });
  const run = await s.openRun(reader.json.id);
  const offList = await s.toolCall(run.json.id, 'pay', { amount: 1, to: 'acme' });
  ok(t, offList, 403, 'a tool not on the agent');
  t.equal(offList.json.code, 'forbidden');
  const stranger = await s.toolCall(run.json.id, 'lookup', {}, s.other.key);
  ok(t, stranger, 404, "another key's run");
  ok(t, await s.trace(run.json.id, s.other.key), 404, "another key's trace");
  ok(t, await call(s.url, 'GET', `/v1/agents/runs/${run.json.id}`, { key: s.operator.key }), 404, 'even an admin of the environment does not own it');
  t.equal(s.upstream.received.length, 0);
});

t.test('a call needing review is held, then executed once after approval, and the trace shows the approval', async (t) => {
  const s = await setup(t);
  await s.payTool('pay', '/pay');
  const agent = await s.agent({ name: 'bot', scopes: ['payments:write'], tools: ['pay'] });
  const run = await s.openRun(agent.json.id);
  const stream = await openStream(t, s.url, s.runner.key);
  stream.send({ type: 'subscribe', topics: [`agents/${agent.json.id}`] });
  await stream.next((m) => m.type === 'subscribed');

  const held = await s.toolCall(run.json.id, 'pay', { amount: 4000, to: 'acme' });
  ok(t, held, 202, 'held');
  const id = held.json.id;
  t.equal(held.headers.get('location'), `/v1/decisions/${id}`);
  t.match(held.json, { status: 'created', gate: 'human_approval', nextAction: 'approve', subject: { type: 'agent-tool-call', id: held.json.callId } });
  await stream.next((m) => m.type === 'event' && m.kind === 'agent.tool_call.held');
  t.equal(s.upstream.received.length, 0, 'nothing sent before approval');

  const self = await call(s.url, 'POST', `/v1/decisions/${id}/approve`, { key: (await issueKey(s.url, s.operator.key, { env: 'sandbox', scopes: ['decisions:approve'] })).key });
  ok(t, self, 200, 'another key approves');
  const executed = await call(s.url, 'POST', `/v1/decisions/${id}/execute`, { key: s.approver.key });
  ok(t, executed, 200, 'execute');
  await stream.next((m) => m.type === 'event' && m.kind === 'agent.tool_call.executed' && m.data.callId === held.json.callId);
  t.equal(s.upstream.received.length, 1, 'the tool was called exactly once');
  t.equal(s.upstream.received[0]!.url, '/pay');

  const traced = await s.trace(run.json.id);
  t.match(traced.json.steps[0], { state: 'executed', decisionId: id, approval: { status: 'executed', approvals: [{ keyId: /^key_/ }] }, response: { status: 200 }, request: { method: 'POST', body: '{"amount":4000,"to":"acme"}' } });
  t.equal(typeof traced.json.steps[0].timings.totalMs, 'number');
  t.equal(traced.json.steps[0].approval.approvals.length, 1);
});

t.test('the requester of a held call cannot approve it, and a rejected call is withdrawn', async (t) => {
  const s = await setup(t);
  await s.payTool('pay', '/pay');
  const agent = await s.agent({ name: 'bot', scopes: ['payments:write'], tools: ['pay'] });
  const both = await issueKey(s.url, s.operator.key, { env: 'sandbox', scopes: ['agents:run', 'decisions:approve'] });
  const run = await s.openRun(agent.json.id, undefined, both.key);
  const held = await s.toolCall(run.json.id, 'pay', { amount: 2000, to: 'acme' }, both.key);
  ok(t, held, 202, 'held');
  const own = await call(s.url, 'POST', `/v1/decisions/${held.json.id}/approve`, { key: both.key });
  ok(t, own, 403, 'self approval');
  t.ok(own.json.reasons.includes('the requester of a tool call may not approve it'));
  ok(t, await call(s.url, 'POST', `/v1/decisions/${held.json.id}/reject`, { key: s.approver.key }), 200, 'reject');
  const traced = await s.trace(run.json.id, both.key);
  t.equal(traced.json.steps[0].state, 'withdrawn');
  t.equal(s.upstream.received.length, 0);
});

t.test('replay diffs every step against another policy version without calling any tool', async (t) => {
  const s = await setup(t);
  await s.payTool('pay', '/pay');
  const agent = await s.agent({ name: 'bot', scopes: ['payments:write'], tools: ['pay'] });
  const run = await s.openRun(agent.json.id);
  await s.toolCall(run.json.id, 'pay', { amount: 50, to: 'a' });
  await s.toolCall(run.json.id, 'pay', { amount: 300, to: 'b' });
  const sent = s.upstream.received.length;
  const same = await call(s.url, 'POST', `/v1/agents/runs/${run.json.id}/replay`, { key: s.runner.key, body: {} });
  ok(t, same, 200, 'replay against the current version');
  t.equal(same.json.changed, 0);
  const v2 = await call(s.url, 'POST', `/v1/agents/runs/${run.json.id}/replay`, { key: s.runner.key, body: { policy: 'agent-tools-v2' } });
  ok(t, v2, 200, 'replay against v2');
  t.match(v2.json.steps, [
    { step: 1, tool: 'pay', before: { allow: true, gate: 'auto' }, after: { policy: 'agent-tools-v2', allow: true }, changed: false },
    { step: 2, tool: 'pay', before: { allow: true }, after: { allow: false, reasons: ['agent-tools-v2 refuses amounts above 100'] }, changed: true },
  ]);
  t.equal(v2.json.changed, 1);
  t.equal(s.upstream.received.length, sent, 'no tool was called');
  const unknown = await call(s.url, 'POST', `/v1/agents/runs/${run.json.id}/replay`, { key: s.runner.key, body: { policy: 'agent-tools-v7' } });
  ok(t, unknown, 422, 'unknown policy');
  t.equal(unknown.json.code, 'unknown_policy');
});

t.test('rollback compensates executed steps newest first, reports each outcome, and closes the run', async (t) => {
  const s = await setup(t);
  await s.payTool('pay', '/pay', { compensate: { method: 'POST', url: `${s.upstream.url}/refund` } });
  await s.payTool('pay-badrefund', '/pay', { compensate: { method: 'POST', url: `${s.upstream.url}/fail-refund` } });
  await s.payTool('pay-final', '/pay');
  const agent = await s.agent({ name: 'bot', scopes: ['payments:write'], tools: ['pay', 'pay-badrefund', 'pay-final'] });
  const run = await s.openRun(agent.json.id);
  const first = await s.toolCall(run.json.id, 'pay', { amount: 10, to: 'a' });
  await s.toolCall(run.json.id, 'pay-badrefund', { amount: 20, to: 'b' });
  await s.toolCall(run.json.id, 'pay-final', { amount: 30, to: 'c' });
  await s.toolCall(run.json.id, 'pay', { amount: 40, to: 'd' });
  const before = s.upstream.received.length;
  const rolled = await call(s.url, 'POST', `/v1/agents/runs/${run.json.id}/rollback`, { key: s.runner.key });
  ok(t, rolled, 200, 'rollback');
  t.equal(rolled.json.complete, false, 'one compensation failed');
  t.same(rolled.json.steps.map((x: { step: number; outcome: string }) => [x.step, x.outcome]), [
    [4, 'compensated'],
    [3, 'no_compensation'],
    [2, 'failed'],
    [1, 'compensated'],
  ]);
  const compensations = s.upstream.received.slice(before);
  t.same(compensations.map((r) => r.url), ['/refund', '/fail-refund', '/refund'], 'newest first, continuing past the failure');
  t.match(JSON.parse(compensations[2]!.body.toString()), { callId: first.json.call.id, tool: 'pay', input: { amount: 10 }, result: { ok: true } });
  const traced = await s.trace(run.json.id);
  t.equal(traced.json.state, 'rolled_back');
  t.match(traced.json.steps[1].compensation, { outcome: 'failed', response: { status: 500 }, policy: { allow: true } });
  const after = await s.toolCall(run.json.id, 'pay', { amount: 1, to: 'e' });
  ok(t, after, 409, 'a rolled-back run takes no calls');
  const again = await call(s.url, 'POST', `/v1/agents/runs/${run.json.id}/rollback`, { key: s.runner.key });
  t.same(again.json.steps.map((x: { outcome: string }) => x.outcome), ['already_compensated', 'no_compensation', 'failed', 'already_compensated'], 'a second rollback retries only what failed');
});

t.test('limits stop the run with a clear reason', async (t) => {
  const s = await setup(t);
  await s.payTool('pay', '/pay');
  const agent = await s.agent({ name: 'bot', scopes: ['payments:write'], tools: ['pay'] });
  const calls = await s.openRun(agent.json.id, { maxToolCalls: 2 });
  ok(t, await s.toolCall(calls.json.id, 'pay', { amount: 1, to: 'a' }), 200, 'first');
  ok(t, await s.toolCall(calls.json.id, 'pay', { amount: 1, to: 'a' }), 200, 'second');
  const third = await s.toolCall(calls.json.id, 'pay', { amount: 1, to: 'a' });
  ok(t, third, 409, 'third call');
  t.match(third.json, { code: 'conflict', state: 'stopped', reason: 'limit:tool_calls' });
  t.match((await s.trace(calls.json.id)).json, { state: 'stopped', stopReason: 'limit:tool_calls' });

  const spend = await s.openRun(agent.json.id, { maxSpend: 100 });
  ok(t, await s.toolCall(spend.json.id, 'pay', { amount: 60, to: 'a' }), 200, 'within spend');
  const over = await s.toolCall(spend.json.id, 'pay', { amount: 50, to: 'a' });
  t.match(over.json, { code: 'conflict', reason: 'limit:spend' });
  const after = await s.toolCall(spend.json.id, 'pay', { amount: 1, to: 'a' });
  ok(t, after, 409, 'a stopped run stays stopped');
  t.equal(after.json.reason, 'limit:spend');

  const wall = await s.openRun(agent.json.id, { maxWallMs: 1 });
  await new Promise((r) => setTimeout(r, 20));
  const late = await s.toolCall(wall.json.id, 'pay', { amount: 1, to: 'a' });
  t.match(late.json, { code: 'conflict', reason: 'limit:wall_time' });
  t.equal(s.upstream.received.length, 3, 'no refused call reached the tool');
});

t.test('a long run pages its trace and replay, and its policy sees a bounded history', async (t) => {
  const s = await setup(t);
  await s.payTool('pay', '/pay');
  const agent = await s.agent({ name: 'bot', scopes: ['payments:write'], tools: ['pay'] });
  const run = await s.openRun(agent.json.id, { maxToolCalls: 300 });
  const runId: string = run.json.id;
  // Ten at a time: calls on one run are admitted one after another but execute side by side.
  for (let i = 0; i < 300; i += 10) {
    const answers = await Promise.all(Array.from({ length: 10 }, (_, j) => s.toolCall(runId, 'pay', { amount: 1, to: `payee-${i + j}` })));
    const failed = answers.filter((a) => a.status !== 200);
    if (failed.length) t.fail('every call is executed', { answers: failed.map((a) => a.json) });
  }
  t.equal(s.upstream.received.length, 300, 'the tool was called 300 times');
  ok(t, await s.toolCall(runId, 'pay', { amount: 1, to: 'one more' }), 409, 'the 301st call passes maxToolCalls');

  const first = await s.trace(runId);
  t.match(first.json, { calls: 300, spend: 300, byState: { executed: 300, denied: 0 }, byTool: { pay: 300 }, nextAfter: 100 });
  t.equal(first.json.steps.length, 100, 'a page holds 100 steps by default');
  const steps = [...first.json.steps];
  for (let after = first.json.nextAfter; after !== null; ) {
    const page = await call(s.url, 'GET', `/v1/agents/runs/${runId}?after=${after}&limit=64`, { key: s.runner.key });
    ok(t, page, 200, `page after ${after}`);
    t.ok(page.json.steps.length <= 64);
    steps.push(...page.json.steps);
    after = page.json.nextAfter;
  }
  t.same(steps.map((x: { index: number }) => x.index), Array.from({ length: 300 }, (_, i) => i + 1), 'every step once, in order');
  t.equal(new Set(steps.map((x: { id: string }) => x.id)).size, 300);
  t.ok(steps.every((x: { state: string }) => x.state === 'executed'));

  const historyOf = (index: number) => steps[index - 1].policyInput.run;
  t.same(historyOf(1).history, [], 'the first call has no history');
  t.same(historyOf(21).history.map((h: { index: number }) => h.index), Array.from({ length: 20 }, (_, i) => i + 1));
  const last = historyOf(300);
  t.same(last.history.map((h: { index: number }) => h.index), Array.from({ length: 20 }, (_, i) => i + 280), 'the last call sees the 20 steps before it');
  t.match(last, { calls: 299, spend: 299, byTool: { pay: 299 } }, 'and counters for the whole run');
  // Its batch's other calls may still have been executing when it was judged.
  t.equal(last.byState.executed + last.byState.executing, 299);
  const size = (index: number) => JSON.stringify(historyOf(index)).length;
  t.ok(size(300) < size(21) * 1.05, 'the policy input stops growing once the history is full (only the digits grow)', { at21: size(21), at300: size(300) });

  const replay = (body: Record<string, unknown>) => call(s.url, 'POST', `/v1/agents/runs/${runId}/replay`, { key: s.runner.key, body });
  const middle = await replay({ after: 290, limit: 5 });
  ok(t, middle, 200, 'replay a page');
  t.same(middle.json.steps.map((x: { step: number }) => x.step), [291, 292, 293, 294, 295]);
  t.match(middle.json, { changed: 0, nextAfter: 295 });
  const end = await replay({ after: 295 });
  t.same(end.json.steps.map((x: { step: number }) => x.step), [296, 297, 298, 299, 300]);
  t.equal(end.json.nextAfter, null, 'the last page');
});

t.test('concurrent calls on one run are admitted exactly within its limits', async (t) => {
  const s = await setup(t);
  await s.payTool('pay', '/pay');
  const agent = await s.agent({ name: 'bot', scopes: ['payments:write'], tools: ['pay'] });
  const calls = await s.openRun(agent.json.id, { maxToolCalls: 10 });
  const byCalls = await Promise.all(Array.from({ length: 25 }, () => s.toolCall(calls.json.id, 'pay', { amount: 1, to: 'a' })));
  t.same(byCalls.map((a) => a.status).sort(), [...Array(10).fill(200), ...Array(15).fill(409)], '10 admitted, 15 refused');
  const spend = await s.openRun(agent.json.id, { maxSpend: 100 });
  const bySpend = await Promise.all(Array.from({ length: 10 }, () => s.toolCall(spend.json.id, 'pay', { amount: 30, to: 'a' })));
  t.equal(bySpend.filter((a) => a.status === 200).length, 3, 'three of 30 fit in 100');
  t.equal(s.upstream.received.length, 13, 'only admitted calls reached the tool');
  const traced = await s.trace(calls.json.id);
  t.same(traced.json.steps.map((x: { index: number }) => x.index), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  t.match(traced.json, { state: 'stopped', stopReason: 'limit:tool_calls', calls: 10 });
});

t.test('a rollback waits for a call still executing and undoes it too', async (t) => {
  const s = await setup(t);
  await s.payTool('slow-pay', '/slow-pay', { compensate: { method: 'POST', url: `${s.upstream.url}/refund` } });
  const agent = await s.agent({ name: 'bot', scopes: ['payments:write'], tools: ['slow-pay'] });
  const run = await s.openRun(agent.json.id);
  const pending = s.toolCall(run.json.id, 'slow-pay', { amount: 5, to: 'a' });
  while (s.upstream.received.length === 0) await new Promise((r) => setTimeout(r, 5));
  const rolled = await call(s.url, 'POST', `/v1/agents/runs/${run.json.id}/rollback`, { key: s.runner.key });
  ok(t, rolled, 200, 'rollback');
  ok(t, await pending, 200, 'the call that was executing finished');
  t.match(rolled.json, { complete: true, steps: [{ step: 1, outcome: 'compensated' }] });
  t.same(s.upstream.received.map((r) => r.url), ['/slow-pay', '/refund']);
});
