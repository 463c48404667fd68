import t, { type Test } from 'tap';
import { call, issueKey, startTestServer, tempDir, type Answer } from './helpers/gatehouse.ts';
import { routePolicies, startUpstream, type Upstream } from './helpers/upstream.ts';

// Tool calls still waiting on their tool when a shutdown's drain ends (issue 20, item 12): each
// caller gets an answer, and what a restarted server has recorded agrees with it.

t.setTimeout(120_000);
const engine = await routePolicies(t, {});
t.teardown(() => engine.close());

const DRAIN_MS = 300;
/** How long a shutdown may take here: the drain, then a short grace for the interrupted calls' answers. */
const CLOSE_BOUND_MS = DRAIN_MS + 1500;

/** A tool that answers 200 after the `delayMs` its input names. */
async function delayingTool(t: Test): Promise<Upstream> {
  return startUpstream(t, (req, res, received) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      received.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const timer = setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ paid: true }));
      }, JSON.parse(body.toString()).delayMs);
      res.once('close', () => clearTimeout(timer));
    });
  });
}

async function started(t: Test) {
  const upstream = await delayingTool(t);
  const dataDir = tempDir(t);
  const config = { dataDir, policies: engine, toolAllow: ['127.0.0.1'], drainTimeoutMs: DRAIN_MS };
  const first = await startTestServer(t, config);
  const operator = await issueKey(first.url, first.admin, { env: 'sandbox', scopes: ['admin'] });
  const runner = await issueKey(first.url, first.admin, { env: 'sandbox', scopes: ['agents:run'] });
  const tool = await call(first.url, 'POST', '/v1/agents/tools', {
    key: operator.key,
    body: {
      name: 'pay',
      description: 'pays, slowly',
      inputSchema: { type: 'object', properties: { amount: { type: 'number' }, delayMs: { type: 'integer' } }, required: ['amount', 'delayMs'] },
      upstream: { method: 'POST', url: `${upstream.url}/pay` },
      scopes: ['payments:write'],
      policy: 'agent-tools-v1',
      spendField: 'amount',
    },
  });
  t.equal(tool.status, 201, 'tool registered');
  const agent = await call(first.url, 'POST', '/v1/agents', { key: operator.key, body: { name: 'payer', scopes: ['payments:write'], tools: ['pay'] } });
  const run = await call(first.url, 'POST', '/v1/agents/runs', { key: runner.key, body: { agentId: agent.json.id } });
  t.equal(run.status, 201, 'run opened');
  const pay = (input: { amount: number; delayMs: number }) =>
    call(first.url, 'POST', `/v1/agents/runs/${run.json.id}/tool-calls`, { key: runner.key, body: { tool: 'pay', input } });
  /** Stops the first server once the tool holds `count` calls, timing the shutdown. */
  const stopWhenReceived = async (count: number) => {
    while (upstream.received.length < count) await new Promise((r) => setTimeout(r, 5));
    const at = performance.now();
    await first.server.close();
    return performance.now() - at;
  };
  const restart = async () => {
    const second = await startTestServer(t, config);
    const trace = await call(second.url, 'GET', `/v1/agents/runs/${run.json.id}`, { key: runner.key });
    return { server: second.server, steps: new Map<string, { state: string; error: { code: string } | null }>(trace.json.steps.map((s: { id: string }) => [s.id, s])) };
  };
  return { first, operator, upstream, pay, stopWhenReceived, restart };
}

t.test('calls straddling the drain deadline are answered, and each is recorded as its caller was told', async (t) => {
  const s = await started(t);
  // Well inside the drain, around its deadline, and far past it.
  const delays = [50, 150, DRAIN_MS - 20, DRAIN_MS, DRAIN_MS + 20, DRAIN_MS + 100, 3000, 5000];
  const answers = delays.map((delayMs) => s.pay({ amount: 1, delayMs }).catch((error: Error) => error));
  const closeMs = await s.stopWhenReceived(delays.length);
  t.ok(closeMs < CLOSE_BOUND_MS, `the shutdown took ${Math.round(closeMs)} ms, not the slow tools' time`);

  const told: { delayMs: number; callId: string; status: number }[] = [];
  for (const [i, answer] of (await Promise.all(answers)).entries()) {
    const delayMs = delays[i]!;
    if (answer instanceof Error) {
      t.fail(`the call delayed ${delayMs} ms got no answer: ${answer.message}`);
      continue;
    }
    const { status, json } = answer as Answer;
    if (status === 200) {
      t.equal(json.call.state, 'executed', `delayed ${delayMs} ms: 200 with the executed step`);
      told.push({ delayMs, callId: json.call.id, status });
    } else {
      t.match(json, { status: 503, code: 'not_ready', detail: /interrupted by shutdown.*may have reached the tool/, callId: /^call_/ }, `delayed ${delayMs} ms: 503 saying what happened`);
      told.push({ delayMs, callId: json.callId, status });
    }
  }
  t.equal(told[0]?.status, 200, 'the call the tool answered well within the drain succeeded');
  t.equal(told.at(-1)?.status, 503, 'the call the tool answered long after the drain was interrupted');

  const after = await s.restart();
  t.equal(after.steps.size, delays.length, 'every call has its step');
  for (const { delayMs, callId, status } of told) {
    const step = after.steps.get(callId);
    if (status === 200) t.equal(step?.state, 'executed', `delayed ${delayMs} ms: answered 200 and recorded executed`);
    else t.match(step, { state: 'failed', error: { code: 'interrupted' } }, `delayed ${delayMs} ms: answered 503 and recorded failed (interrupted)`);
  }
  const audited = [...after.server.services.audit.all()].filter((e) => e.method === 'POST' && e.path.endsWith('/tool-calls'));
  t.same(
    audited.map((e) => e.status).sort(),
    told.map((c) => c.status).sort(),
    'the audit log holds the answers the callers got',
  );
  t.equal(s.upstream.received.length, delays.length, 'no call was sent again after the restart');
});

t.test('an approved call still running at the deadline is recorded failed (interrupted) with its audit entry', async (t) => {
  const s = await started(t);
  const held = await s.pay({ amount: 4000, delayMs: 5000 });
  t.equal(held.status, 202, 'held for review');
  const approver = await issueKey(s.first.url, s.operator.key, { env: 'sandbox', scopes: ['decisions:approve', 'decisions:execute'] });
  t.equal((await call(s.first.url, 'POST', `/v1/decisions/${held.json.id}/approve`, { key: approver.key })).status, 200, 'approved');
  t.equal((await call(s.first.url, 'POST', `/v1/decisions/${held.json.id}/execute`, { key: approver.key })).status, 200, 'executed');
  const closeMs = await s.stopWhenReceived(1);
  t.ok(closeMs < CLOSE_BOUND_MS, `the shutdown took ${Math.round(closeMs)} ms, not the slow tool's time`);

  const after = await s.restart();
  t.match(after.steps.get(held.json.callId), { state: 'failed', error: { code: 'interrupted', detail: /may have reached the tool/ } });
  const entry = [...after.server.services.audit.all()].find((e) => e.route === 'agent tool call');
  t.match(entry, { status: 503, code: 'interrupted' }, 'audited as interrupted');
});
