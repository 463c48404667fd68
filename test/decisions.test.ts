import t, { type Test } from 'tap';
import { bundledEngine } from './helpers/policies.ts';
import { call, issueKey, startTestServer, type Answer } from './helpers/gatehouse.ts';

// The decision workflow against the bundled Rego policies, compiled by the project's compiler
// and evaluated by the real engine.

// Compiling the bundled policies can take a while on a cold cache.
t.setTimeout(600_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

const ALL = ['decisions:read', 'decisions:write', 'decisions:approve', 'decisions:execute', 'impact:read'];

async function setup(t: Test) {
  const { url, admin, server } = await startTestServer(t, { policies: engine });
  const creator = await issueKey(url, admin, { env: 'sandbox', scopes: ALL, name: 'creator' });
  const approver = await issueKey(url, admin, { env: 'sandbox', scopes: ALL, name: 'approver', roles: ['finance-approver'] });
  const cfo = await issueKey(url, admin, { env: 'sandbox', scopes: ALL, name: 'cfo', roles: ['cfo'] });
  const bystander = await issueKey(url, admin, { env: 'sandbox', scopes: ALL, name: 'bystander' });
  const as = (key: { key: string }) => ({
    create: (body: unknown, headers: Record<string, string> = {}) => call(url, 'POST', '/v1/decisions', { key: key.key, body, headers }),
    get: (id: string) => call(url, 'GET', `/v1/decisions/${id}`, { key: key.key }),
    list: (query = '') => call(url, 'GET', `/v1/decisions${query}`, { key: key.key }),
    act: (id: string, action: string, body?: unknown) => call(url, 'POST', `/v1/decisions/${id}/${action}`, { key: key.key, ...(body ? { body } : {}) }),
    trace: (ref: string) => call(url, 'GET', `/v1/impact/trace?ref=${ref}`, { key: key.key }),
  });
  return { url, admin, server, creator, approver, cfo, bystander, as };
}

const gate = (score: number) => ({ title: `Deploy with risk ${score}`, policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: score }] });
const spend = (amount: number) => ({ title: `Spend ${amount}`, policy: 'spend-approval-v1', context: [{ source: 'finance:amount', value: amount }] });
const ok = (t: Test, answer: Answer, what: string) => {
  t.equal(answer.status, 200, `${what}: ${answer.status === 200 ? 'ok' : answer.text}`);
  return answer.json;
};

t.test('readiness reports the loaded policies', async (t) => {
  const { url } = await startTestServer(t, { policies: engine });
  const ready = await call(url, 'GET', '/readyz');
  t.equal(ready.status, 200);
  t.match(ready.json.policies, ['agent-tools-v1', 'decision-gate-v1', 'route-access-v1', 'security-review-v1', 'spend-approval-v1']);
});

t.test('a low-risk decision runs without a human', async (t) => {
  const { as, creator, bystander } = await setup(t);
  const created = ok(t, await as(creator).create({ ...gate(10), inputs: ['repo:web'], objectives: ['ship the fix'] }), 'create');
  t.match(created, {
    id: /^dec_/,
    status: 'created',
    gate: 'auto',
    nextAction: 'execute',
    auditTrail: /^trace_/,
    title: 'Deploy with risk 10',
    policy: 'decision-gate-v1',
    moduleHash: /^sha256:/,
    context: [{ source: 'risk:score', value: 10 }],
    inputs: ['repo:web'],
    objectives: ['ship the fix'],
    createdAt: String,
    createdBy: creator.id,
  });
  t.same(ok(t, await as(bystander).get(created.id), 'get'), created, 'GET returns what POST did');
  t.equal((await as(creator).act(created.id, 'approve')).json.code, 'invalid_transition', 'nothing to approve');
  const executed = ok(t, await as(bystander).act(created.id, 'execute', { comment: 'go' }), 'execute');
  t.match(executed, { status: 'executed', nextAction: 'none' });
  t.match(executed.history.at(-1), { action: 'execute', keyId: bystander.id, comment: 'go', status: 'executed' });
  for (const action of ['approve', 'reject', 'execute', 'cancel']) {
    const again = await as(creator).act(created.id, action);
    t.equal(again.status, 409, `${action} after execution`);
    // RFC 9457: `status` is the HTTP status; the decision's own is another member.
    t.match(again.json, { code: 'invalid_transition', status: 409, decisionStatus: 'executed', decisionId: created.id });
  }
});

t.test('a risky decision waits for someone other than its creator', async (t) => {
  const { as, creator, approver, bystander } = await setup(t);
  const created = ok(t, await as(creator).create(gate(85)), 'create');
  t.match(created, { gate: 'human_approval', nextAction: 'approve', requiredApprovals: { count: 1 } });
  t.match(created.reasons, [/risk:score is 85/]);

  const early = await as(bystander).act(created.id, 'execute');
  t.equal(early.status, 403, 'executing before approval is refused by the policy');
  t.match(early.json, { code: 'policy_denied', status: 403, decisionStatus: 'blocked', auditTrail: created.auditTrail });
  t.ok(early.json.reasons.some((r: string) => /execution needs 1 approval/.test(r)), 'says why');
  t.equal((await as(creator).get(created.id)).json.status, 'blocked', 'and the decision is blocked');

  const selfApproval = await as(creator).act(created.id, 'approve');
  t.equal(selfApproval.status, 403, 'separation of duties');
  t.ok(selfApproval.json.reasons.includes('the creator of a decision may not approve it'), 'says why');

  const approved = ok(t, await as(approver).act(created.id, 'approve', { comment: 'looks fine' }), 'approve');
  t.match(approved, { status: 'approved', nextAction: 'execute', approvals: [{ keyId: approver.id, comment: 'looks fine' }] });
  t.equal((await as(bystander).act(created.id, 'approve')).json.code, 'invalid_transition', 'no further approval needed');
  const executed = ok(t, await as(bystander).act(created.id, 'execute'), 'execute');
  t.equal(executed.status, 'executed');
  t.same(
    executed.history.map((h: { action: string; status: string }) => `${h.action}:${h.status}`),
    ['create:created', 'execute:blocked', 'approve:approved', 'execute:executed'],
  );
});

t.test('reject and cancel', async (t) => {
  const { as, creator, approver, bystander } = await setup(t);
  const first = ok(t, await as(creator).create(gate(90)), 'create');
  t.equal(ok(t, await as(approver).act(first.id, 'reject', { comment: 'too risky' }), 'reject').status, 'rejected');
  t.equal((await as(approver).act(first.id, 'approve')).status, 409, 'approve after reject');
  t.equal((await as(creator).act(first.id, 'cancel')).status, 409, 'cancel after reject');

  const second = ok(t, await as(creator).create(gate(90)), 'create');
  const stranger = await as(bystander).act(second.id, 'cancel');
  t.equal(stranger.status, 403, 'only the creator or an admin may cancel');
  t.ok(stranger.json.reasons.includes('only the creator of a decision or an admin may cancel it'), 'says why');
  t.equal(ok(t, await as(creator).act(second.id, 'cancel'), 'cancel').status, 'cancelled');
  t.equal((await as(creator).act(second.id, 'execute')).json.code, 'invalid_transition');

  t.equal((await as(creator).act('dec_0000000000000000000000', 'approve')).status, 404);
  t.equal((await as(creator).act(second.id, 'approve', { comment: 7 })).status, 400, 'comment must be text');
});

t.test('spend approvals follow roles and amounts', async (t) => {
  const { as, creator, approver, cfo, bystander } = await setup(t);
  t.match(ok(t, await as(creator).create(spend(200)), 'small'), { gate: 'auto', nextAction: 'execute' });

  const medium = ok(t, await as(creator).create(spend(5000)), 'medium');
  t.match(medium, { gate: 'human_approval', nextAction: 'approve', requiredApprovals: { roles: ['finance-approver'], count: 1 } });
  const noRole = await as(bystander).act(medium.id, 'approve');
  t.equal(noRole.status, 403);
  t.ok(noRole.json.reasons.includes('only a finance-approver or the cfo may approve a spend'), 'says why');
  t.match(ok(t, await as(approver).act(medium.id, 'approve'), 'approve'), { status: 'approved', nextAction: 'execute' });

  const large = ok(t, await as(creator).create(spend(75_000)), 'large');
  t.match(large.requiredApprovals, { count: 2 });
  t.match(ok(t, await as(approver).act(large.id, 'approve'), 'first approval'), { status: 'created', nextAction: 'approve' });
  t.match(ok(t, await as(cfo).act(large.id, 'approve'), 'cfo approval'), { status: 'approved', nextAction: 'execute' });
  t.equal(ok(t, await as(bystander).act(large.id, 'execute'), 'execute').status, 'executed');

  const refused = await as(creator).create({ title: 'No amount', policy: 'spend-approval-v1', context: 'please pay' });
  t.equal(refused.status, 403);
  t.match(refused.json, { code: 'policy_denied', policy: 'spend-approval-v1', decisionId: null, auditTrail: /^trace_/ });
  t.ok(refused.json.reasons.includes('the context must carry a numeric finance:amount'), 'says why');
  const trace = ok(t, await as(creator).trace(refused.json.auditTrail), 'trace of a refusal');
  t.equal(trace.decisionId, null, 'no decision was stored');
  t.match(trace.entries, [{ status: 403, code: 'policy_denied', policy: 'spend-approval-v1', result: { allow: false } }]);
});

t.test('unknown policies', async (t) => {
  const { as, creator } = await setup(t);
  const answer = await as(creator).create({ ...gate(1), policy: 'decision-gate-v9' });
  t.equal(answer.status, 422);
  t.equal(answer.json.code, 'unknown_policy');
  t.ok(answer.json.policies.includes('decision-gate-v1'), 'names the loaded policies');
});

t.test('listing pages through decisions in a stable order', async (t) => {
  const { as, creator, approver } = await setup(t);
  const ids: string[] = [];
  for (let i = 0; i < 7; i++) ids.push(ok(t, await as(creator).create(gate(i % 2 ? 90 : 5)), `create ${i}`).id);
  ok(t, await as(approver).act(ids[1]!, 'approve'), 'approve one');

  const seen: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 10; page++) {
    const answer = ok(t, await as(creator).list(`?limit=3${cursor ? `&cursor=${cursor}` : ''}`), `page ${page}`);
    seen.push(...answer.data.map((d: { id: string }) => d.id));
    cursor = answer.nextCursor;
    if (!cursor) break;
  }
  t.same(seen, ids, 'every decision once, oldest first');
  t.same(ok(t, await as(creator).list('?gate=human_approval'), 'by gate').data.map((d: { id: string }) => d.id), [ids[1], ids[3], ids[5]]);
  t.same(ok(t, await as(creator).list('?status=approved'), 'by status').data.map((d: { id: string }) => d.id), [ids[1]]);
  t.same(ok(t, await as(creator).list('?policy=spend-approval-v1'), 'by policy').data, []);
  t.equal((await as(creator).list('?cursor=garbage')).status, 400);
  t.equal((await as(creator).list('?status=unknown')).status, 400);
});

t.test('the audit trail of a decision', async (t) => {
  const { as, creator, approver, bystander, admin, url } = await setup(t);
  const created = ok(t, await as(creator).create(gate(95), { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }), 'create');
  await as(creator).get(created.id);
  ok(t, await as(approver).act(created.id, 'approve'), 'approve');
  ok(t, await as(bystander).act(created.id, 'execute'), 'execute');
  const trace = ok(t, await as(bystander).trace(created.auditTrail), 'trace');
  t.equal(trace.decisionId, created.id);
  t.same(
    trace.entries.map((e: { route: string; status: number; keyId: string }) => [e.route, e.status, e.keyId]),
    [
      ['/v1/decisions', 200, creator.id],
      ['/v1/decisions/{id}', 200, creator.id],
      ['/v1/decisions/{id}/approve', 200, approver.id],
      ['/v1/decisions/{id}/execute', 200, bystander.id],
    ],
  );
  const [create, , approve] = trace.entries;
  t.match(create, {
    policy: 'decision-gate-v1',
    moduleHash: created.moduleHash,
    inputDigest: /^[0-9a-f]{64}$/,
    result: { allow: true, gate: 'human_approval', nextAction: 'approve' },
    traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    decisionId: created.id,
    env: 'sandbox',
  });
  t.match(approve.result, { allow: true, nextAction: 'execute' });
  t.same(ok(t, await as(bystander).trace(created.id), 'trace by decision id').entries, trace.entries);
  t.ok(trace.entries.every((e: { seq: number }, i: number) => i === 0 || e.seq > trace.entries[i - 1].seq), 'in order');

  // The production admin sees none of the sandbox's decisions.
  t.equal((await call(url, 'GET', `/v1/decisions/${created.id}`, { key: admin })).status, 404);
  t.same((await call(url, 'GET', '/v1/decisions', { key: admin })).json.data, []);
  t.equal((await call(url, 'GET', `/v1/impact/trace?ref=${created.auditTrail}`, { key: admin })).status, 404);
});

t.test('idempotent creation', async (t) => {
  const { as, creator, approver } = await setup(t);
  const body = gate(50);
  const first = await as(creator).create(body, { 'idempotency-key': 'create-1' });
  t.equal(first.status, 200);
  const again = await as(creator).create(body, { 'idempotency-key': 'create-1' });
  t.equal(again.text, first.text, 'replayed byte for byte');
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  const different = await as(creator).create(gate(51), { 'idempotency-key': 'create-1' });
  t.equal(different.status, 422);
  t.equal(different.json.code, 'idempotency_mismatch');
  const otherKey = await as(approver).create(body, { 'idempotency-key': 'create-1' });
  t.not(otherKey.json.id, first.json.id, 'keys are scoped per API key');

  const answers = await Promise.all(Array.from({ length: 20 }, () => as(creator).create(gate(60), { 'idempotency-key': 'burst' })));
  const created = answers.filter((a) => a.status === 200 && !a.headers.get('idempotent-replayed'));
  t.equal(created.length, 1, 'twenty identical requests at once create one decision');
  t.ok(answers.every((a) => a.status === 200 || a.json.code === 'idempotency_in_flight'));
  t.ok(answers.filter((a) => a.status === 200).every((a) => a.json.id === created[0]!.json.id));
  const all = (await as(creator).list('?limit=200')).json.data;
  t.equal(all.filter((d: { context: { value: number }[] }) => d.context[0]!.value === 60).length, 1);

  const refusedOnce = await as(creator).create({ title: 'x', policy: 'spend-approval-v1', context: 'no amount' }, { 'idempotency-key': 'deny' });
  const refusedAgain = await as(creator).create({ title: 'x', policy: 'spend-approval-v1', context: 'no amount' }, { 'idempotency-key': 'deny' });
  t.equal(refusedAgain.text, refusedOnce.text, 'a policy refusal is replayed too');
});

t.test('production keys need a security review', async (t) => {
  const { url, admin } = await setup(t);
  const unsigned = await call(url, 'POST', '/v1/keys', { key: admin, body: { env: 'production', scopes: ['decisions:read'] }, signer: null });
  t.equal(unsigned.status, 401, 'production requests must be signed');
  t.match(unsigned.json, { code: 'signature_required' });
  const keys = (await call(url, 'GET', '/v1/keys?env=production', { key: admin })).json.data;
  t.equal(keys.length, 1, 'no pending key was left behind');
  const issued = await call(url, 'POST', '/v1/keys', { key: admin, body: { env: 'production', scopes: ['decisions:read'] } });
  t.equal(issued.status, 201, 'a signed request opens the review');
  t.match(issued.json, { status: 'pending_review', review: { decisionId: /^dec_/, auditTrail: /^trace_/ } });
});

t.test("with the server setting off, the review policy's requireSignature still refuses unsigned requests", async (t) => {
  const { url, admin } = await startTestServer(t, { policies: engine, signatures: 'off' });
  const refused = await call(url, 'POST', '/v1/keys', { key: admin, body: { env: 'production', scopes: ['decisions:read'] }, signer: null });
  t.equal(refused.status, 401);
  t.match(refused.json, { code: 'signature_required', policy: 'security-review-v1', auditTrail: /^trace_/ });
  t.ok(refused.json.reasons.includes('production keys must sign their requests'), 'says why');
  const keys = (await call(url, 'GET', '/v1/keys?env=production', { key: admin, signer: null })).json.data;
  t.equal(keys.length, 1, 'no pending key was left behind');

  // A refusal the caller fixes by signing is not kept for its Idempotency-Key.
  const body = { title: 'x', policy: 'decision-gate-v1', context: 'routine' };
  const headers = { 'idempotency-key': 'sign-then-retry' };
  t.equal((await call(url, 'POST', '/v1/decisions', { key: admin, body, headers, signer: null })).json.code, 'signature_required');
  const signedRetry = await call(url, 'POST', '/v1/decisions', { key: admin, body, headers });
  t.equal(signedRetry.json.code, 'policy_denied', 'the signed retry runs (admin alone may not create decisions)');
  t.equal(signedRetry.headers.get('idempotent-replayed'), null);
  const again = await call(url, 'POST', '/v1/decisions', { key: admin, body, headers });
  t.equal(again.headers.get('idempotent-replayed'), 'true', 'and its answer is the one kept');
});
