import t, { type Test } from 'tap';
import { DEFAULT_WEIGHTS } from '../core/memory/hybrid-ranking.ts';
import { call, issueKey, startTestServer, type Answer } from './helpers/gatehouse.ts';

// Versioned memory and hybrid retrieval over HTTP: a real server, real LMDB, the real offline
// word-vector model (loaded once for this process, on the first write).

t.setTimeout(120_000);

async function setup(t: Test) {
  const { url, admin, server } = await startTestServer(t);
  const writer = await issueKey(url, admin, { env: 'sandbox', scopes: ['memory:read', 'memory:write'] });
  const reader = await issueKey(url, admin, { env: 'sandbox', scopes: ['memory:read'] });
  const as = (key: { key: string }) => ({
    write: (body: unknown, headers: Record<string, string> = {}) => call(url, 'POST', '/v1/memory', { key: key.key, body, headers }),
    get: (id: string, query = '') => call(url, 'GET', `/v1/memory/${id}${query}`, { key: key.key }),
    versions: (id: string) => call(url, 'GET', `/v1/memory/${id}/versions`, { key: key.key }),
    remove: (id: string) => call(url, 'DELETE', `/v1/memory/${id}`, { key: key.key }),
    query: (body: unknown) => call(url, 'POST', '/v1/memory/query', { key: key.key, body }),
  });
  return { url, admin, server, writer, reader, as };
}

const status = (t: Test, answer: Answer, expected: number, what: string) => {
  t.equal(answer.status, expected, `${what}: ${answer.status === expected ? 'ok' : answer.text}`);
  return answer.json;
};

t.test('writing a key again adds a version; nothing is overwritten', async (t) => {
  const { as, writer, reader } = await setup(t);
  const first = status(t, await as(writer).write({ namespace: 'finance', key: 'budget_q3', text: 'Q3 budget is 1.2 million', attributes: { amount: 1.2e6 } }), 201, 'write v1');
  t.match(first, { id: /^mem_/, namespace: 'finance', key: 'budget_q3', version: 1, revision: 1, tombstone: false, createdBy: writer.id, links: [] });
  const second = status(t, await as(writer).write({ namespace: 'finance', key: 'budget_q3', text: 'Q3 budget is 1.5 million', attributes: { amount: 1.5e6 } }), 201, 'write v2');
  t.equal(second.id, first.id, 'same item');
  t.equal(second.version, 2);
  t.equal(second.revision, 2);

  t.same(status(t, await as(reader).get(first.id), 200, 'latest'), second, 'GET answers the latest version');
  t.same(status(t, await as(reader).get(first.id, '?version=1'), 200, 'v1'), first, 'version 1 is intact');
  t.same(status(t, await as(reader).get(first.id, '?asOf=1'), 200, 'asOf revision 1'), first, 'asOf a revision');
  t.same(status(t, await as(reader).get(first.id, `?asOf=${encodeURIComponent(second.createdAt)}`), 200, 'asOf time'), second, 'asOf a time');
  t.equal((await as(reader).get(first.id, '?asOf=1999-01-01T00:00:00Z')).status, 404, 'before it existed');
  const versions = status(t, await as(reader).versions(first.id), 200, 'versions');
  t.same(versions.versions.map((v: { version: number; text: string }) => [v.version, v.text]), [[1, 'Q3 budget is 1.2 million'], [2, 'Q3 budget is 1.5 million']]);

  const now = await as(reader).query({ query: 'budget million', graph: { expand: 0 } });
  t.same(status(t, now, 200, 'query now').results.map((r: { version: number }) => r.version), [2], 'a query sees the current version only');
  const then = await as(reader).query({ query: 'budget million', asOf: 1 });
  t.match(status(t, then, 200, 'query asOf').results, [{ id: first.id, version: 1, text: 'Q3 budget is 1.2 million' }], 'asOf answers as memory stood then');
  t.equal(then.json.revision, 1);

  t.equal((await as(reader).write({ namespace: 'finance', text: 'x' })).status, 403, 'a reader cannot write');
  t.equal((await as(reader).get('mem_unknown')).status, 404);
});

t.test('writes of one new key at once store consecutive versions of one item, each reply the version stored', async (t) => {
  const { as, writer } = await setup(t);
  const texts = Array.from({ length: 6 }, (_, i) => `runbook draft ${i}`);
  const replies = await Promise.all(texts.map((text) => as(writer).write({ namespace: 'ops', key: 'runbook', text })));
  const written = replies.map((reply, i) => status(t, reply, 201, `write ${i}`));
  t.equal(new Set(written.map((item: { id: string }) => item.id)).size, 1, 'one item');
  t.same(written.map((item: { version: number }) => item.version).sort((a: number, b: number) => a - b), [1, 2, 3, 4, 5, 6], 'six versions, none given twice');
  const stored = status(t, await as(writer).versions(written[0].id), 200, 'versions');
  for (const item of written) {
    t.same(stored.versions[item.version - 1], item, `version ${item.version} is what its writer was answered`);
  }
});

t.test('delete writes a tombstone; history stays', async (t) => {
  const { as, writer } = await setup(t);
  const item = status(t, await as(writer).write({ namespace: 'ops', key: 'runbook', text: 'restart the payment gateway nightly' }), 201, 'write');
  const tomb = status(t, await as(writer).remove(item.id), 200, 'delete');
  t.match(tomb, { id: item.id, version: 2, tombstone: true, text: '' });
  const gone = await as(writer).get(item.id);
  t.equal(gone.status, 404, 'deleted item is gone');
  t.equal(gone.json.deletedVersion, 2, 'and says when');
  t.equal(gone.headers.get('content-type'), 'application/problem+json');
  t.same(status(t, await as(writer).get(item.id, '?version=1'), 200, 'v1').text, 'restart the payment gateway nightly', 'history readable');
  t.equal(status(t, await as(writer).query({ query: 'payment gateway' }), 200, 'query').results.length, 0, 'not found by queries');
  t.equal(status(t, await as(writer).query({ query: 'payment gateway', asOf: 1 }), 200, 'query asOf').results.length, 1, 'but found as of before');
  t.equal((await as(writer).remove(item.id)).status, 409, 'deleting twice is a conflict');
  t.equal((await as(writer).remove('mem_nothing')).status, 404);
  const again = status(t, await as(writer).write({ namespace: 'ops', key: 'runbook', text: 'restart the gateway weekly' }), 201, 'rewrite');
  t.equal(again.version, 3, 'writing after a delete continues the versions');
});

t.test('hybrid query: score breakdown, lineage and graph expansion', async (t) => {
  const { as, writer } = await setup(t);
  const incident = status(t, await as(writer).write({ namespace: 'incidents', key: 'inc-42', text: 'Checkout latency spiked after the ledger deploy in eu-west' }), 201, 'incident');
  const followUp = status(
    t,
    await as(writer).write({ namespace: 'notes', text: 'Rolled back; owners agreed to add a canary stage.', links: [{ to: 'incidents:inc-42', relation: 'about' }] }),
    201,
    'follow-up',
  );
  t.same(followUp.links, [{ to: incident.id, relation: 'about', version: 1 }], 'a label link resolves to the id and version');
  await as(writer).write({ namespace: 'incidents', key: 'inc-7', text: 'Marketing newsletter bounced for gmail recipients' });
  await as(writer).write({ namespace: 'incidents', key: 'inc-42', text: 'Checkout latency spiked after the ledger deploy in eu-west; p99 reached 4 s' });

  const answer = status(t, await as(writer).query({ query: 'slow checkout after ledger release', topK: 5 }), 200, 'query');
  const [top] = answer.results;
  t.equal(top.id, incident.id, 'the incident ranks first');
  t.equal(top.version, 2);
  t.ok(top.scores.semantic > 0 && top.scores.lexical > 0, 'both text signals contribute');
  const w = DEFAULT_WEIGHTS;
  t.ok(Math.abs(top.score - (w.semantic * top.scores.semantic + w.lexical * top.scores.lexical + w.graph * top.scores.graph)) < 1e-9, 'score is the weighted sum');
  t.ok(top.signals.cosine > 0 && top.signals.bm25 > 0, 'raw signals reported');
  t.same(top.lineage.versions.map((v: { version: number }) => v.version), [1, 2], 'lineage lists the version chain');
  const note = answer.results.find((r: { id: string }) => r.id === followUp.id);
  t.ok(note, 'the follow-up is found through its link');
  t.match(note.lineage.via, { from: incident.id, relation: 'about', direction: 'out', hops: 1 });
  t.ok(note.scores.graph > 0, 'with a graph component');

  const noGraph = status(t, await as(writer).query({ query: 'slow checkout after ledger release', topK: 5, graph: { expand: 0 } }), 200, 'no graph');
  const plain = noGraph.results.find((r: { id: string }) => r.id === followUp.id);
  t.ok(!plain || plain.scores.graph === 0, 'expand 0 turns the graph off');
  const otherRelation = await as(writer).query({ query: 'slow checkout after ledger release', graph: { expand: 1, relations: ['uses'] } });
  t.notOk(
    status(t, otherRelation, 200, 'relations').results.some((r: { id: string; scores: { graph: number } }) => r.id === followUp.id && r.scores.graph > 0),
    'only the named relations are followed',
  );
  const lexicalOnly = status(t, await as(writer).query({ query: 'newsletter', weights: { semantic: 0, lexical: 1, graph: 0 } }), 200, 'lexical');
  t.match(lexicalOnly.results, [{ key: 'inc-7', scores: { semantic: 0, lexical: 1 } }]);
  const scoped = status(t, await as(writer).query({ query: 'checkout latency', namespaces: ['notes'], graph: { expand: 0 } }), 200, 'namespaces');
  t.ok(scoped.results.every((r: { namespace: string }) => r.namespace === 'notes'), 'namespaces restrict results');
  const filtered = await as(writer).query({ query: 'checkout', filters: { attributes: { team: 'none' } } });
  t.equal(status(t, filtered, 200, 'filters').results.length, 0, 'attribute filters apply');
});

t.test('bad queries and writes are refused with clear problems', async (t) => {
  const { as, writer } = await setup(t);
  await as(writer).write({ namespace: 'notes', text: 'something to find' });
  const cases: Array<[unknown, RegExp]> = [
    [{ query: '   ' }, /query is empty/],
    [{ query: 'x'.repeat(1001) }, /longer than 1000/],
    [{ query: 'find', namespaces: ['nowhere'] }, /unknown namespace: nowhere/],
    [{ query: 'find', topK: 0 }, /topK must be an integer from 1 to 100/],
    [{ query: 'find', topK: 101 }, /topK/],
    [{ query: 'find', asOf: 'yesterday' }, /asOf must be an ISO 8601 time/],
    [{ query: 'find', asOf: 99 }, /ahead of memory/],
    [{ query: 'find', graph: { expand: 9 } }, /graph.expand/],
    [{ query: 'find', weights: { semantic: 0, lexical: 0, graph: 1 } }, /weights/],
  ];
  for (const [body, detail] of cases) {
    const answer = await as(writer).query(body);
    t.equal(answer.status, 400, `${JSON.stringify(body).slice(0, 60)} → 400`);
    t.match(answer.json, { code: 'invalid_request', detail }, 'says why');
  }
  t.same((await as(writer).query({ query: 'find', namespaces: ['nowhere'] })).json.namespaces, ['notes'], 'lists the known namespaces');
  t.equal((await as(writer).query({ query: 7 })).status, 400, 'schema: query must be text');
  t.match((await as(writer).write({ namespace: 'decisions', text: 'forged' })).json, { status: 400, detail: /written by Gatehouse/ });
  t.match((await as(writer).write({ namespace: 'notes', text: 'x', links: [{ to: 'notes:missing', relation: 'about' }] })).json, { status: 400, detail: /not a memory item/ });
  t.equal((await as(writer).write({ namespace: 'Bad Namespace', text: 'x' })).status, 400);
  t.equal((await as(writer).write({ namespace: 'notes', text: '' })).status, 400, 'empty text');
  t.equal((await as(writer).get('mem_x', '?version=1&asOf=1')).status, 400, 'version and asOf together');
});

t.test('environments never see each other', async (t) => {
  const { as, writer, server } = await setup(t);
  const sandboxItem = status(t, await as(writer).write({ namespace: 'secrets', key: 'plan', text: 'sandbox rollout plan for the ledger' }), 201, 'sandbox write');
  // Production keys need a security review to become active; write production memory in-process.
  const memory = server.services.memory;
  t.equal(memory.space('production').revision, 0, 'production memory starts empty');
  const staged = await server.services.store.commit(() => memory.write('production', 'key_test', { namespace: 'secrets', key: 'plan', text: 'production rollout plan for the ledger' }, null));
  t.not(staged.id, sandboxItem.id, 'the same namespace and key is another item in production');
  t.equal(staged.version, 1, 'with its own versions');
  t.throws(() => memory.get('sandbox', staged.id), { code: 'not_found' }, 'a production item is not visible from sandbox');
  t.equal((await as(writer).get(staged.id)).status, 404, 'nor over HTTP');
  const own = status(t, await as(writer).query({ query: 'rollout plan ledger' }), 200, 'sandbox query');
  t.same(own.results.map((r: { id: string }) => r.id), [sandboxItem.id], 'queries see their own environment only');
  const production = await memory.query('production', { query: 'rollout plan ledger' });
  t.same(production.results.map((r) => r.item.id), [staged.id]);
});
