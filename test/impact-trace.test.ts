import t, { type Test } from 'tap';
import { bundledEngine } from './helpers/policies.ts';
import { call, issueKey, startTestServer, type Answer } from './helpers/gatehouse.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';

// GET /v1/impact/trace end to end: a real server over LMDB, the bundled Rego policies on the real
// engine, webhooks delivered to a receiver on 127.0.0.1, decisions recorded into memory.

t.setTimeout(600_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

const SCOPES = ['decisions:read', 'decisions:write', 'decisions:approve', 'decisions:execute', 'impact:read', 'memory:read', 'webhooks:manage'];
const WEBHOOKS = { allow: ['127.0.0.1'], retryScheduleMs: [50, 100], attemptTimeoutMs: 2_000, pollMs: 100 };

async function setup(t: Test) {
  const { url, admin } = await startTestServer(t, { policies: engine, webhooks: WEBHOOKS });
  const creator = await issueKey(url, admin, { env: 'sandbox', scopes: SCOPES, name: 'creator' });
  const approver = await issueKey(url, admin, { env: 'sandbox', scopes: SCOPES, name: 'approver', roles: ['finance-approver'] });
  const as = (key: { key: string }) => (method: string, path: string, body?: unknown) => call(url, method, path, { key: key.key, ...(body === undefined ? {} : { body }) });
  const trace = (query: string, key = creator) => call(url, 'GET', `/v1/impact/trace?${query}`, { key: key.key });
  return { url, admin, creator, approver, as, trace };
}

const ok = (t: Test, answer: Answer, what: string) => {
  t.equal(answer.status, 200, `${what}: ${answer.status === 200 ? 'ok' : answer.text}`);
  return answer.json;
};

const decide = (risk: number, title: string, inputs: string[], objectives: string[]) => ({
  title,
  policy: 'decision-gate-v1',
  context: [{ source: 'risk:score', value: risk }],
  inputs,
  objectives,
});

/** Every page of a trace, following `nextCursor`; at most 50 pages. */
async function allPages(t: Test, trace: (query: string) => Promise<Answer>, query: string, field: 'steps' | 'decisions') {
  const pages: any[] = [];
  let cursor: string | null = null;
  do {
    const page: any = ok(t, await trace(`${query}${cursor ? `&cursor=${cursor}` : ''}`), `page ${pages.length + 1}`);
    pages.push(page);
    cursor = page.nextCursor;
  } while (cursor !== null && pages.length < 50);
  return { pages, items: pages.flatMap((page) => page[field]) };
}

t.test('a decision’s trace: requests and policy evaluations, approval, execution, events and webhook deliveries, in order', async (t) => {
  const { creator, approver, as, trace } = await setup(t);
  const receiver = await startReceiver(t);
  const hook = await as(creator)('POST', '/v1/webhooks/config', { url: receiver.url, events: ['decision.*'] });
  t.equal(hook.status, 201, hook.text);

  const created = ok(t, await as(creator)('POST', '/v1/decisions', decide(95, 'Deploy the billing fix', ['repo:web'], ['Ship the fix'])), 'create');
  const refused = await as(creator)('POST', `/v1/decisions/${created.id}/approve`);
  t.equal(refused.status, 403, 'the creator may not approve');
  ok(t, await as(approver)('POST', `/v1/decisions/${created.id}/approve`, { comment: 'looks right' }), 'approve');
  ok(t, await as(creator)('POST', `/v1/decisions/${created.id}/execute`), 'execute');
  await receiver.waitFor((received) => received.length >= 3);

  // The receiver has answered; the outbox records the attempt just after. Ask until it has (bounded).
  let full: any;
  for (let attempt = 0; attempt < 100; attempt++) {
    full = ok(t, await trace(`decision=${created.id}`), 'trace');
    const deliveries = full.steps.filter((s: { type: string }) => s.type === 'webhook_delivery');
    if (deliveries.length === 3 && deliveries.every((d: { status: string }) => d.status === 'delivered')) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.match(full, { kind: 'decision', ref: created.auditTrail, decisionId: created.id, decision: { id: created.id, status: 'executed', moduleHash: created.moduleHash }, nextCursor: null });
  const of = (type: string) => full.steps.filter((s: { type: string }) => s.type === type);

  t.same(
    of('request').map((s: { route: string; status: number; keyId: string }) => [s.route, s.status, s.keyId]),
    [
      ['/v1/decisions', 200, creator.id],
      ['/v1/decisions/{id}/approve', 403, creator.id],
      ['/v1/decisions/{id}/approve', 200, approver.id],
      ['/v1/decisions/{id}/execute', 200, creator.id],
    ],
    'every call, from the audit log',
  );
  t.same(
    full.entries.map((e: { seq: number }) => e.seq),
    of('request').map((s: { seq: number }) => s.seq),
    'the audit entries in full, one per request step',
  );
  t.ok(full.entries.every((e: { hash: string }) => /^[0-9a-f]{64}$/.test(e.hash)), 'entries carry their chain hashes');

  const evaluations = of('policy_evaluation');
  t.equal(evaluations.length, 4, 'each call’s policy evaluation');
  t.ok(evaluations.every((e: { policy: string; moduleHash: string }) => e.policy === 'decision-gate-v1' && e.moduleHash === created.moduleHash), 'with the module hash that ran');
  t.same(
    evaluations.map((e: { result: { allow: boolean } }) => e.result.allow),
    [true, false, true, true],
  );
  t.match(evaluations[0].result, { gate: 'human_approval', nextAction: 'approve' });
  t.ok(evaluations[1].result.reasons.includes('the creator of a decision may not approve it'), 'the refusal’s reasons');

  t.same(
    full.steps.filter((s: { type: string }) => ['transition', 'approval', 'execution'].includes(s.type)).map((s: { type: string; status: string }) => [s.type, s.status]),
    [
      ['transition', 'created'],
      ['approval', 'approved'],
      ['execution', 'executed'],
    ],
    'the workflow steps',
  );
  t.match(of('approval')[0], { keyId: approver.id, roles: ['finance-approver'], comment: 'looks right' });

  const events = of('event');
  t.same(
    events.map((e: { kind: string }) => e.kind),
    ['decision.created', 'policy.denied', 'decision.approved', 'decision.executed'],
    'the decision’s events, the refusal included',
  );
  t.ok(events.every((e: { topic: string }) => e.topic === `decisions/${created.id}`));
  const deliveries = of('webhook_delivery');
  t.same(
    deliveries.map((d: { eventId: string; status: string; attempts: number; endpointId: string }) => [d.eventId, d.status, d.attempts, d.endpointId]),
    events.filter((e: { kind: string }) => e.kind !== 'policy.denied').map((e: { eventId: string }) => [e.eventId, 'delivered', 1, hook.json.id]),
    'each delivered event’s delivery',
  );

  const times = full.steps.map((s: { at: string }) => s.at);
  t.same(times, [...times].sort(), 'steps in time order');
  const index = (step: unknown) => full.steps.indexOf(step);
  t.ok(deliveries.every((d: { eventId: string }) => index(d) > index(events.find((e: { eventId: string }) => e.eventId === d.eventId))), 'every delivery after its event');
  t.ok(index(of('approval')[0]) < index(of('execution')[0]), 'approval before execution');

  const byRef = ok(t, await trace(`ref=${created.auditTrail}`), 'by trace reference');
  t.same(byRef.steps, full.steps, 'ref= traces the same decision');
  t.same(ok(t, await trace(`ref=${created.id}`), 'ref= with a decision id').steps, full.steps);

  const paged = await allPages(t, trace, `decision=${created.id}&limit=4`, 'steps');
  t.ok(paged.pages.length >= 4, `${full.steps.length} steps make ${paged.pages.length} pages of 4`);
  t.ok(paged.pages.every((page) => page.steps.length <= 4));
  t.same(paged.items, full.steps, 'the pages, joined, are the whole trace, nothing repeated or skipped');
  t.same(
    paged.pages.flatMap((page) => page.entries.map((e: { seq: number }) => e.seq)),
    full.entries.map((e: { seq: number }) => e.seq),
    'each page carries the audit entries of its own request steps',
  );
});

t.test('a decision’s trace holds every refused attempt against it, whichever stage refused it', async (t) => {
  const { url, admin, creator, approver, as, trace } = await setup(t);
  const reader = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read', 'impact:read'], name: 'reader' });
  const created = ok(t, await as(creator)('POST', '/v1/decisions', decide(95, 'Rotate the signing keys', [], [])), 'create');
  const attempt = async (key: { key: string }, action: string, body: unknown, status: number, headers: Record<string, string> = {}) => {
    const answer = await call(url, 'POST', `/v1/decisions/${created.id}/${action}`, { key: key.key, body, headers });
    t.equal(answer.status, status, `${action} → ${status}: ${answer.json?.code ?? 'ok'}`);
  };
  await attempt(creator, 'execute', {}, 403); // the policy: no approval yet
  await attempt(reader, 'approve', {}, 403); // no decisions:approve scope
  await attempt(approver, 'approve', { comment: 'x'.repeat(5000) }, 400); // the body's schema
  await attempt(approver, 'approve', {}, 200, { 'idempotency-key': 'approve-once' });
  await attempt(approver, 'approve', {}, 200, { 'idempotency-key': 'approve-once' }); // replayed
  await attempt(approver, 'approve', {}, 409, { 'idempotency-key': 'approve-twice' }); // already approved
  await attempt(creator, 'approve', { other: 1 }, 400);
  t.equal((await call(url, 'POST', '/v1/decisions/dec_0nosuchdecision/approve', { key: approver.key, body: {} })).status, 404);

  const { steps } = ok(t, await trace(`decision=${created.id}`), 'trace');
  t.same(
    steps.filter((s: { type: string }) => s.type === 'request').map((s: { route: string; status: number; code: string | null; keyId: string; replayed: boolean }) => [s.route.split('/').at(-1), s.status, s.code, s.keyId, s.replayed]),
    [
      ['decisions', 200, null, creator.id, false],
      ['execute', 403, 'policy_denied', creator.id, false],
      ['approve', 403, 'insufficient_scope', reader.id, false],
      ['approve', 400, 'invalid_request', approver.id, false],
      ['approve', 200, null, approver.id, false],
      ['approve', 200, null, approver.id, true],
      ['approve', 409, 'invalid_transition', approver.id, false],
      ['approve', 400, 'invalid_request', creator.id, false],
    ],
    'each attempt in order, refused or replayed, and nothing from calls naming another decision',
  );
});

t.test('inputs and objectives: the decisions they influenced, with outcomes and the version each saw', async (t) => {
  const { url, admin, creator, approver, as, trace } = await setup(t);
  const a = ok(t, await as(creator)('POST', '/v1/decisions', decide(10, 'Roll out the cache', ['repo:web', 'repo:api'], ['Ship the fix'])), 'A');
  ok(t, await as(creator)('POST', `/v1/decisions/${a.id}/execute`), 'execute A');
  const b = ok(t, await as(creator)('POST', '/v1/decisions', decide(90, 'Migrate the sessions table', ['repo:web'], ['Ship the fix', 'Keep uptime'])), 'B');
  ok(t, await as(approver)('POST', `/v1/decisions/${b.id}/reject`, { comment: 'not this week' }), 'reject B');
  const c = ok(t, await as(creator)('POST', '/v1/decisions', decide(40, 'Raise the API rate limit', ['repo:api'], ['Keep uptime'])), 'C');

  const ids = (page: { decisions: Array<{ decisionId: string }> }) => page.decisions.map((d) => d.decisionId);
  const web = ok(t, await trace('input=repo:web'), 'input repo:web');
  t.match(web, { kind: 'input', subject: { namespace: 'repo', key: 'web' }, total: 2, outcomes: { executed: 1, rejected: 1 }, nextCursor: null });
  t.same(ids(web), [a.id, b.id], 'the decisions that used it, oldest first');
  t.same(
    web.decisions.map((d: { status: string; link: { relation: string } }) => [d.status, d.link.relation]),
    [
      ['executed', 'uses'],
      ['rejected', 'uses'],
    ],
  );
  t.match(web.decisions[0], { title: 'Roll out the cache', policy: 'decision-gate-v1', gate: 'auto', auditTrail: a.auditTrail });
  t.same(ids(ok(t, await trace('input=repo:api'), 'input repo:api')), [a.id, c.id]);
  t.same(ids(ok(t, await trace(`input=${web.subject.id}`), 'input by memory id')), [a.id, b.id]);

  const risk = ok(t, await trace('input=risk:score'), 'a context value');
  t.same(ids(risk), [a.id, b.id, c.id]);
  t.same(
    risk.decisions.map((d: { link: { version: number } }) => d.link.version),
    [1, 2, 3],
    'each decision names the version of the value it saw',
  );
  for (const [decision, value] of [
    [risk.decisions[0], 10],
    [risk.decisions[1], 90],
    [risk.decisions[2], 40],
  ] as const) {
    const seen = ok(t, await as(creator)('GET', `/v1/memory/${risk.subject.id}?version=${decision.link.version}`), 'the version seen');
    t.equal(seen.attributes.value, value, `${decision.decisionId} saw risk:score = ${value}`);
    const memory = ok(t, await as(creator)('GET', `/v1/memory/${decision.memory.id}?version=${decision.memory.version}`), 'the decision’s memory version');
    t.equal(memory.attributes.status, decision.status, 'the outcome is what that memory version records');
  }

  const paged = await allPages(t, trace, 'input=risk:score&limit=2', 'decisions');
  t.same(paged.pages.map((page) => page.decisions.length), [2, 1], 'pages of 2');
  t.same(paged.items, risk.decisions);
  t.same(paged.pages[1].outcomes, risk.outcomes, 'outcomes count every decision, on every page');

  const ship = ok(t, await trace(`objective=${encodeURIComponent('Ship the fix')}`), 'objective by title');
  t.match(ship, { kind: 'objective', subject: { namespace: 'objectives', key: 'ship-the-fix' }, total: 2, outcomes: { executed: 1, rejected: 1 } });
  t.same(ids(ship), [a.id, b.id]);
  t.ok(ship.decisions.every((d: { link: { relation: string } }) => d.link.relation === 'serves'));
  const uptime = ok(t, await trace('objective=keep-uptime'), 'objective by key');
  t.same(ids(uptime), [b.id, c.id]);
  t.match(uptime.outcomes, { created: 1, rejected: 1 });
  t.same(ids(ok(t, await trace(`objective=${uptime.subject.id}`), 'objective by id')), [b.id, c.id]);

  t.equal((await call(url, 'GET', '/v1/impact/trace?input=repo:web', { key: admin })).status, 404, 'another environment sees nothing');
});

t.test('bad parameters are refused with a problem that says what is wrong', async (t) => {
  const { creator, as, trace } = await setup(t);
  const created = ok(t, await as(creator)('POST', '/v1/decisions', decide(10, 'Tidy the logs', ['repo:web'], [])), 'create');
  const problem = async (query: string, status: number, detail: RegExp) => {
    const answer = await trace(query);
    t.equal(answer.status, status, `${query || '(nothing)'} → ${status}`);
    t.equal(answer.headers.get('content-type'), 'application/problem+json');
    t.match(answer.json, { status, detail }, query);
  };
  await problem('', 400, /exactly one of decision, ref, input or objective: none was given/);
  await problem(`decision=${created.id}&input=repo:web`, 400, /exactly one .*got decision and input/);
  await problem(`ref=${created.auditTrail}&objective=x`, 400, /got ref and objective/);
  await problem('decision=trace_123', 400, /decision must be a decision id/);
  await problem('ref=nonsense', 400, /ref must be a trace_… reference or a dec_… id/);
  await problem('input=no-label-here', 400, /input must be a namespace:name label/);
  await problem(`decision=${created.id}&cursor=garbage`, 400, /cursor is not one this endpoint returned/);
  await problem(`decision=${created.id}&limit=0`, 400, /does not match the schema/);
  await problem(`decision=${created.id}&verbose=1`, 400, /does not match the schema/);
  await problem('decision=dec_0000000000000', 404, /no decision dec_0000000000000/);
  await problem('ref=trace_0000000000000', 404, /no audit entries/);
  await problem('input=repo:nothing', 404, /no memory item for input repo:nothing/);
  await problem('objective=Unheard%20of', 404, /no objective 'Unheard of'/);
});
