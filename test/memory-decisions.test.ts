import t, { type Test } from 'tap';
import type { Embedder } from '../core/memory/embedder.ts';
import { WordVectorEmbedder } from '../core/memory/word-vectors.ts';
import { bundledEngine } from './helpers/policies.ts';
import { call, issueKey, startTestServer, type Answer } from './helpers/gatehouse.ts';

// Decisions recorded into memory with their edges, and objectives, through the real workflow
// (bundled Rego policies, real engine) and a real server. A decision's memory is recorded just
// after its reply: the API's memory routes wait for it, and so do these tests where they look at
// the server's memory directly (`memory.written()`).

t.setTimeout(600_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

const SCOPES = ['decisions:read', 'decisions:write', 'decisions:approve', 'decisions:execute', 'memory:read', 'memory:write'];

async function setup(t: Test) {
  const { url, admin, server } = await startTestServer(t, { policies: engine });
  const creator = await issueKey(url, admin, { env: 'sandbox', scopes: SCOPES });
  const approver = await issueKey(url, admin, { env: 'sandbox', scopes: SCOPES, roles: ['finance-approver'] });
  const as = (key: { key: string }) => (method: string, path: string, body?: unknown) => call(url, method, path, { key: key.key, ...(body === undefined ? {} : { body }) });
  return { server, creator, approver, as };
}

const ok = (t: Test, answer: Answer, status = 200) => {
  t.equal(answer.status, status, answer.status === status ? `${status}` : answer.text);
  return answer.json;
};

t.test('a decision is written into memory with uses, serves, governed_by, approved_by and supersedes edges', async (t) => {
  const { server, creator, approver, as } = await setup(t);
  const memory = server.services.memory;
  const budget = ok(t, await as(creator)('POST', '/v1/memory', { namespace: 'finance', key: 'budget_q3', text: 'Q3 marketing budget: 50,000' }), 201);
  const body = {
    title: 'Pay the agency invoice',
    policy: 'spend-approval-v1',
    context: [{ source: 'finance:amount', value: 4200 }],
    inputs: ['finance:budget_q3', 'vendor:acme'],
    objectives: ['Grow the newsletter audience'],
  };
  const decision = ok(t, await as(creator)('POST', '/v1/decisions', body));
  await memory.written();
  const itemId = memory.idForKey('sandbox', 'decisions', decision.id);
  t.ok(itemId, 'the decision has a memory item');
  const created = ok(t, await as(creator)('GET', `/v1/memory/${itemId}`));
  t.match(created, { namespace: 'decisions', key: decision.id, version: 1, attributes: { status: 'created', policy: 'spend-approval-v1', gate: 'human_approval', moduleHash: /^sha256:/ } });
  const edges = (item: { links: Array<{ to: string; relation: string; version: number }> }) =>
    item.links.map((link) => `${link.relation} ${memory.items.latest('sandbox', link.to)?.namespace}:${memory.items.latest('sandbox', link.to)?.key}@${link.version}`).sort();
  t.same(edges(created), [
    'governed_by policies:spend-approval-v1@1',
    'serves objectives:grow-the-newsletter-audience@1',
    `uses finance:amount@1`,
    `uses finance:budget_q3@1`,
    'uses vendor:acme@1',
  ]);
  t.equal(created.links.find((l: { relation: string; to: string }) => l.to === budget.id)?.relation, 'uses', 'an existing input is linked, not rewritten');
  t.equal(memory.get('sandbox', memory.idForKey('sandbox', 'finance', 'amount')!).attributes.value, 4200, 'the context value is memory too');

  const approved = ok(t, await as(approver)('POST', `/v1/decisions/${decision.id}/approve`, { comment: 'fine' }));
  t.equal(approved.status, 'approved');
  const afterApproval = ok(t, await as(creator)('GET', `/v1/memory/${itemId}`));
  t.equal(afterApproval.version, 2, 'a transition is a new version');
  t.equal(afterApproval.attributes.status, 'approved');
  t.ok(edges(afterApproval).includes(`approved_by keys:${approver.id}@1`), 'approved_by the approver');
  t.equal(ok(t, await as(creator)('GET', `/v1/memory/${itemId}?version=1`)).attributes.status, 'created', 'the created state is kept');

  const again = ok(t, await as(creator)('POST', '/v1/decisions', { ...body, context: [{ source: 'finance:amount', value: 3900 }] }));
  await memory.written();
  const againItem = memory.get('sandbox', memory.idForKey('sandbox', 'decisions', again.id)!);
  t.ok(againItem.links.some((l) => l.relation === 'supersedes' && l.to === itemId), 'the same question decided again supersedes the earlier decision');
  const amount = againItem.links.find((l) => l.relation === 'uses' && memory.items.latest('sandbox', l.to)?.key === 'amount');
  t.equal(amount?.version, 2, 'a changed context value is a new version, and the link names it');
  t.equal(memory.get('sandbox', amount!.to, { version: 1 }).attributes.value, 4200, 'the first decision’s value stays readable');

  const found = ok(t, await as(creator)('POST', '/v1/memory/query', { query: 'agency invoice payment', namespaces: ['decisions'] }));
  t.ok(found.results.some((r: { key: string }) => r.key === decision.id), 'decisions are searchable');
});

t.test('objectives: create, list, link decisions, see their decisions', async (t) => {
  const { server, creator, as } = await setup(t);
  const objective = ok(t, await as(creator)('POST', '/v1/objectives', { title: 'Reduce cloud spend', description: 'Cut hosting costs by 20% this year' }), 201);
  t.match(objective, { namespace: 'objectives', key: 'reduce-cloud-spend', version: 1, attributes: { title: 'Reduce cloud spend' } });
  const listed = ok(t, await as(creator)('GET', '/v1/objectives'));
  t.same(listed.data.map((o: { id: string }) => o.id), [objective.id]);

  const named = ok(t, await as(creator)('POST', '/v1/decisions', { title: 'Buy reserved instances', policy: 'spend-approval-v1', context: [{ source: 'finance:amount', value: 100 }], objectives: ['reduce-cloud-spend'] }));
  const later = ok(t, await as(creator)('POST', '/v1/decisions', { title: 'Turn off idle clusters', policy: 'spend-approval-v1', context: [{ source: 'finance:amount', value: 10 }] }));
  const linked = ok(t, await as(creator)('POST', `/v1/objectives/${objective.id}/decisions`, { decisionId: later.id }));
  t.same(linked.decisions.map((d: { decisionId: string }) => d.decisionId).sort(), [named.id, later.id].sort(), 'both decisions serve it');
  const view = ok(t, await as(creator)('GET', `/v1/objectives/${objective.id}`));
  t.same(view.decisions.map((d: { decisionId: string; status: string }) => `${d.decisionId}:${d.status}`).sort(), [`${named.id}:created`, `${later.id}:created`].sort());

  ok(t, await as(creator)('POST', `/v1/decisions/${later.id}/execute`));
  const afterExecute = ok(t, await as(creator)('GET', `/v1/objectives/${objective.id}`));
  t.equal(afterExecute.decisions.find((d: { decisionId: string }) => d.decisionId === later.id)?.status, 'executed', 'a later transition keeps the link');
  t.equal(ok(t, await as(creator)('POST', `/v1/objectives/${objective.id}/decisions`, { decisionId: later.id })).decisions.length, 2, 'linking twice changes nothing');

  t.equal((await as(creator)('GET', '/v1/objectives/mem_nothing')).status, 404);
  t.equal((await as(creator)('POST', `/v1/objectives/${objective.id}/decisions`, { decisionId: 'dec_0000' })).status, 404, 'unknown decision');
  const decisionItem = server.services.memory.idForKey('sandbox', 'decisions', later.id)!;
  t.equal((await as(creator)('GET', `/v1/objectives/${decisionItem}`)).status, 404, 'a decision item is not an objective');
  t.equal((await as(creator)('DELETE', `/v1/memory/${decisionItem}`)).status, 400, 'decision memory cannot be deleted through the API');
});

t.test('a caller reads its decision in memory right after the reply, through the API', async (t) => {
  const { server, creator, as } = await setup(t);
  for (let i = 0; i < 5; i++) {
    const decision = ok(t, await as(creator)('POST', '/v1/decisions', { title: `Renew licence batch ${i}`, policy: 'spend-approval-v1', context: [{ source: 'finance:amount', value: 10 + i }] }));
    // No wait here: the memory routes wait for decisions' memory recorded after their replies.
    const found = ok(t, await as(creator)('POST', '/v1/memory/query', { query: `renew licence batch ${i}`, namespaces: ['decisions'] }));
    t.ok(found.results.some((r: { key: string }) => r.key === decision.id), `decision ${i} is found by the next request`);
  }
  await server.services.memory.written();
  t.equal(server.services.memory.list('sandbox', 'decisions').length, 5, 'every decision has its memory stored');
});

t.test('a decision whose memory commit fails (a cluster without a leader, say) has its memory stored by the retry', async (t) => {
  const { server, creator, as } = await setup(t);
  const memory = server.services.memory;
  // The fault: the first commit that carries memory fails, as one the cluster refuses during a
  // failover; twice, since the store runs a failed batch's commits again one by one.
  const write = memory.write.bind(memory);
  let refusals = 2;
  memory.write = (...args) => {
    if (refusals > 0) {
      refusals--;
      throw new Error('the cluster refused the commit');
    }
    return write(...args);
  };
  t.teardown(() => {
    memory.write = write;
  });
  const decision = ok(t, await as(creator)('POST', '/v1/decisions', { title: 'Renew the support contract', policy: 'spend-approval-v1', context: [{ source: 'finance:amount', value: 75 }] }));
  const stored = () => memory.list('sandbox', 'decisions').some((item) => item.key === decision.id);
  for (const deadline = Date.now() + 10_000; !stored() && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 50));
  t.equal(refusals, 0, 'the commit carrying its memory was refused');
  t.ok(stored(), 'the retry stored it');
  const found = ok(t, await as(creator)('POST', '/v1/memory/query', { query: 'renew the support contract', namespaces: ['decisions'] }));
  t.ok(found.results.some((r: { key: string }) => r.key === decision.id), 'and queries find it');
});

t.test("decisions' memory waits for an in-process model still loading, instead of loading it with every request waiting", async (t) => {
  // The real model, behind a load that ends when the test says: what a server just started sees.
  const model = new WordVectorEmbedder();
  let finishLoad = () => {};
  const loading = new Promise<void>((resolve) => (finishLoad = resolve));
  let embeddedEarly = 0;
  let loaded = false;
  const embedder: Embedder = {
    id: model.id,
    dimensions: model.dimensions,
    embed: (texts) => model.embed(texts),
    embedNow: (text) => {
      if (!loaded) embeddedEarly++;
      return model.embedNow(text);
    },
    warm: () => loading,
  };
  const unlimited = { ratePerSecond: 1e6, burst: 1e6 };
  const { url, admin, server } = await startTestServer(t, { policies: engine, embedder, rateLimits: { sandbox: unlimited } });
  const creator = await issueKey(url, admin, { env: 'sandbox', scopes: SCOPES });
  const create = (i: number) => call(url, 'POST', '/v1/decisions', { key: creator.key, body: { title: `Deploy web ${i}`, policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 10 }] } });
  const created = ok(t, await create(0));
  await new Promise((resolve) => setTimeout(resolve, 200));
  const memory = server.services.memory;
  t.equal(memory.idForKey('sandbox', 'decisions', created.id as string), undefined, 'the decision is not recorded while the model loads');
  t.equal(embeddedEarly, 0, 'and nothing was embedded');
  // A backlog larger than one recording transaction takes.
  for (let i = 1; i < 300; i += 50) {
    const answers = await Promise.all(Array.from({ length: Math.min(50, 300 - i) }, (_, j) => create(i + j)));
    t.ok(answers.every((answer) => answer.status === 200), `decisions ${i}–${i + answers.length - 1} created`);
  }
  const { store } = server.services;
  const commit = store.commit.bind(store);
  let commits = 0;
  store.commit = (apply) => {
    commits++;
    return commit(apply);
  };
  loaded = true;
  finishLoad();
  await memory.written();
  t.ok(memory.idForKey('sandbox', 'decisions', created.id as string), 'recorded once the model is ready');
  t.equal(memory.list('sandbox', 'decisions').length, 300, 'every decision of the backlog');
  t.ok(commits >= 2, `in more than one transaction (${commits})`);
  t.equal(embeddedEarly, 0, 'with the model loaded');
});
