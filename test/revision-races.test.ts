import t, { type Test } from 'tap';
import { bundledEngine } from './helpers/policies.ts';
import { call, issueKey, startTestServer, type Answer } from './helpers/gatehouse.ts';

// Read-modify-write races (core/revision.ts): two requests that both read a record and both try
// to change it are sent together, many times. Exactly the changes that can follow each other may
// be applied: a loser gets 409, and the stored record shows only what a winner did.

t.setTimeout(600_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

const ALL = ['decisions:read', 'decisions:write', 'decisions:approve', 'decisions:execute'];
const PAIRS = 20;

async function setup(t: Test) {
  // Webhook receivers on 127.0.0.1 are allowed explicitly: the SSRF guard refuses loopback otherwise.
  const { url, admin } = await startTestServer(t, { policies: engine, webhooks: { allow: ['127.0.0.1'] } });
  const creator = await issueKey(url, admin, { env: 'sandbox', scopes: ALL, name: 'creator' });
  const approverA = await issueKey(url, admin, { env: 'sandbox', scopes: ALL, name: 'approver-a', roles: ['finance-approver'] });
  const approverB = await issueKey(url, admin, { env: 'sandbox', scopes: ALL, name: 'approver-b', roles: ['cfo'] });
  const create = async (body: unknown) => {
    const answer = await call(url, 'POST', '/v1/decisions', { key: creator.key, body });
    if (answer.status !== 200) throw new Error(`create: ${answer.text}`);
    return answer.json as { id: string; revision: number };
  };
  const act = (key: string, id: string, action: string) => call(url, 'POST', `/v1/decisions/${id}/${action}`, { key, body: { comment: action } });
  const get = async (id: string) => (await call(url, 'GET', `/v1/decisions/${id}`, { key: creator.key })).json;
  return { url, admin, creator, approverA, approverB, create, act, get };
}

const spend = (amount: number) => ({ title: `Spend ${amount}`, policy: 'spend-approval-v1', context: [{ source: 'finance:amount', value: amount }] });
const gate = (score: number) => ({ title: `Deploy ${score}`, policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: score }] });

function problemStatus(t: Test, answer: Answer) {
  t.equal(answer.headers.get('content-type'), 'application/problem+json', 'a refusal is a problem document');
  t.equal(answer.json.status, answer.status, "the problem's status is the HTTP status");
}

t.test('a created decision is at revision 1 and each action adds one', async (t) => {
  const { create, act, approverA, get } = await setup(t);
  const created = await create(spend(5_000));
  t.equal(created.revision, 1);
  const approved = await act(approverA.key, created.id, 'approve');
  t.equal(approved.status, 200, approved.text);
  t.equal(approved.json.revision, 2);
  t.equal((await get(created.id)).revision, 2, 'the stored revision is the one answered');
});

t.test('cancel and execute sent together: one wins, and the stored status is the winner’s', async (t) => {
  const { create, act, creator, get } = await setup(t);
  for (let i = 0; i < PAIRS; i++) {
    const { id } = await create(gate(10));
    const [cancel, execute] = await Promise.all([act(creator.key, id, 'cancel'), act(creator.key, id, 'execute')]);
    const winners = [cancel, execute].filter((a) => a.status === 200);
    t.equal(winners.length, 1, `pair ${i}: exactly one applies (${cancel.status}, ${execute.status})`);
    const loser = cancel.status === 200 ? execute : cancel;
    t.equal(loser.status, 409, `pair ${i}: the other is refused with 409`);
    problemStatus(t, loser);
    const stored = await get(id);
    t.equal(stored.status, cancel.status === 200 ? 'cancelled' : 'executed', `pair ${i}: stored status matches the winner`);
    t.equal(stored.history.length, 2, `pair ${i}: one action in the history`);
  }
});

t.test('reject and approve sent together: never both applied', async (t) => {
  const { create, act, approverA, approverB, get } = await setup(t);
  for (let i = 0; i < PAIRS; i++) {
    const { id } = await create(spend(5_000));
    const [reject, approve] = await Promise.all([act(approverB.key, id, 'reject'), act(approverA.key, id, 'approve')]);
    t.equal([reject, approve].filter((a) => a.status === 200).length, 1, `pair ${i}: exactly one applies (${reject.status}, ${approve.status})`);
    const stored = await get(id);
    t.equal(stored.status, reject.status === 200 ? 'rejected' : 'approved', `pair ${i}: stored status matches the winner`);
    t.equal(stored.revision, 2, `pair ${i}: one change stored`);
  }
});

t.test('two approvers together: no approval is lost', async (t) => {
  const { create, act, approverA, approverB, get } = await setup(t);
  for (let i = 0; i < PAIRS; i++) {
    // The CFO tier needs two approvals, so both approvals are allowed in either order.
    const { id } = await create(spend(500_000));
    const answers = await Promise.all([act(approverA.key, id, 'approve'), act(approverB.key, id, 'approve')]);
    const applied = answers.filter((a) => a.status === 200).length;
    for (const answer of answers) if (answer.status !== 200) t.equal(answer.status, 409, `pair ${i}: a loser gets 409: ${answer.text}`);
    const stored = await get(id);
    t.equal(stored.approvals.length, applied, `pair ${i}: every 200 is a stored approval (${applied})`);
    t.equal(stored.revision, 1 + applied, `pair ${i}: the revision counts the applied approvals`);
  }
});

t.test('a loser of an idempotent action stores no answer: its retry is judged again', async (t) => {
  const { create, act, creator, url } = await setup(t);
  // Pairs that land in different event-loop turns meet an already-changed decision
  // (`invalid_transition`, a stored answer); look for one that lost the revision check itself.
  for (let i = 0; i < PAIRS; i++) {
    const { id } = await create(gate(10));
    const send = (action: string) =>
      call(url, 'POST', `/v1/decisions/${id}/${action}`, { key: creator.key, body: {}, headers: { 'idempotency-key': `retry-${id}-${action}` } });
    const [cancel, execute] = await Promise.all([send('cancel'), send('execute')]);
    const loser = cancel.status === 200 ? 'execute' : 'cancel';
    const lost = loser === 'execute' ? execute : cancel;
    if (lost.json.code !== 'conflict') continue;
    const again = await send(loser);
    t.not(again.headers.get('idempotent-replayed'), 'true', 'the conflict was not stored as the key’s answer');
    t.equal(again.status, 409, 'the retry meets the decision as the winner left it');
    t.equal(again.json.code, 'invalid_transition');
    t.equal((await act(creator.key, id, loser)).json.code, 'invalid_transition');
    return;
  }
  t.fail(`no pair out of ${PAIRS} met in one commit`);
});

t.test('revoking a key twice at once: one revocation, one 409', async (t) => {
  const { url, admin } = await setup(t);
  for (let i = 0; i < 10; i++) {
    const key = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'], name: `victim-${i}` });
    const answers = await Promise.all([call(url, 'DELETE', `/v1/keys/${key.id}`, { key: admin }), call(url, 'DELETE', `/v1/keys/${key.id}`, { key: admin })]);
    t.same(answers.map((a) => a.status).sort(), [200, 409], `pair ${i}: ${answers.map((a) => a.status)}`);
  }
});

t.test('two webhook endpoint updates at once: one applies, the other is refused', async (t) => {
  const { url, admin } = await setup(t);
  const hooks = await issueKey(url, admin, { env: 'sandbox', scopes: ['webhooks:manage'], name: 'hooks' });
  const created = await call(url, 'POST', '/v1/webhooks/config', { key: hooks.key, body: { url: 'http://127.0.0.1:9/hook', events: ['decision.*'] } });
  t.equal(created.status, 201, created.text);
  const id = created.json.id as string;
  let applied = 0;
  for (let i = 0; i < 10; i++) {
    const [a, b] = await Promise.all([
      call(url, 'PATCH', `/v1/webhooks/config/${id}`, { key: hooks.key, body: { description: `a${i}` } }),
      call(url, 'PATCH', `/v1/webhooks/config/${id}`, { key: hooks.key, body: { description: `b${i}` } }),
    ]);
    const statuses = [a.status, b.status];
    t.ok(statuses.includes(200), `pair ${i}: one applies (${statuses})`);
    for (const answer of [a, b]) if (answer.status !== 200) t.equal(answer.status, 409, `pair ${i}: the other gets 409`);
    applied += statuses.filter((s) => s === 200).length;
    const stored = await call(url, 'GET', `/v1/webhooks/config/${id}`, { key: hooks.key });
    const winners = [a, b].filter((x) => x.status === 200).map((x) => x.json.description);
    t.ok(winners.includes(stored.json.description), `pair ${i}: the stored description is a winner's`);
  }
  t.ok(applied >= 10, 'every pair applied at least one update');
});
