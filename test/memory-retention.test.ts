import t, { type Test } from 'tap';
import { normalise, type Embedder } from '../core/memory/embedder.ts';
import type { MemoryItem } from '../core/memory/item.ts';
import { Memory } from '../core/memory/memory.ts';
import { COMPACT_AT } from '../core/memory/retention.ts';
import { MemorySpace } from '../core/memory/space.ts';
import { Store } from '../core/store.ts';
import { bundledEngine } from './helpers/policies.ts';
import { call, issueKey, startTestServer, tempDir } from './helpers/gatehouse.ts';
import { Rng } from './helpers/fuzz.ts';

// Retention: memory's query side holds the newest N decision items per environment (and every
// other item's versions still visible from its horizon on), so a sidecar recording decisions for
// months holds a bounded heap. Real LMDB, real compactions in slices, a real server.

t.setTimeout(300_000);

/** Vectors of a few dimensions read off the text's words, from a model that runs "elsewhere" (stored, backfilled). */
const DIMENSIONS = 16;
const embedder: Embedder = {
  id: 'test-words',
  dimensions: DIMENSIONS,
  async embed(texts: string[]) {
    return texts.map((text) => {
      const vector = new Float32Array(DIMENSIONS);
      for (const word of text.toLowerCase().split(/\W+/).filter(Boolean)) {
        const rng = new Rng([...word].reduce((hash, c) => (hash * 31 + c.charCodeAt(0)) >>> 0, 7));
        for (let i = 0; i < DIMENSIONS; i++) vector[i]! += rng.next() - 0.5;
      }
      return normalise(vector);
    });
  },
};

const OPTIONS = { retainDecisions: 20, vectors: { annThreshold: 30, probes: 64 } };
/** The most decision items held between two compactions. */
const MOST = OPTIONS.retainDecisions * COMPACT_AT;

function open(dir: string, retainDecisions = OPTIONS.retainDecisions) {
  const store = Store.open({ dataDir: dir });
  const memory = new Memory(store, embedder, { ...OPTIONS, retainDecisions });
  return { store, memory };
}

/** Records decision `i` as the recorder does: an item under `decisions`, linked to a policy and a context value that changes. */
async function decide(store: Store, memory: Memory, i: number, status = 'created'): Promise<MemoryItem> {
  return store.commit(() => {
    const policy = memory.idForKey('sandbox', 'policies', 'p') ?? memory.write('sandbox', 'key_test', { namespace: 'policies', key: 'p', text: 'policy p' }, null).id;
    const risk = memory.write('sandbox', 'key_test', { namespace: 'risk', key: 'score', text: `risk score ${i}`, attributes: { value: i } }, null).id;
    return memory.write('sandbox', 'key_test', {
      namespace: 'decisions',
      key: `dec_${i}`,
      text: `decision ${i} word${i}`,
      attributes: { status },
      links: [{ to: policy, relation: 'governed_by' }, { to: risk, relation: 'uses' }],
    }, null);
  });
}

/** The decisions held, by number, in the order listed (as first written, or as written again once dropped). */
const heldDecisions = (memory: Memory) => memory.list('sandbox', 'decisions').map((item) => Number(item.key.slice(4)));
const sorted = (numbers: number[]) => [...numbers].sort((a, b) => a - b);

async function find(memory: Memory, word: string): Promise<string[]> {
  const answer = await memory.query('sandbox', { query: word, namespaces: ['decisions'], topK: 5, weights: { semantic: 0, lexical: 1, graph: 0 }, graph: { expand: 0 } });
  return answer.results.map((hit) => hit.item.key);
}

t.test('memory holds the newest decisions, every other item, and what is visible from its horizon on', async (t) => {
  const dir = tempDir(t);
  let { store, memory } = open(dir);
  for (let i = 0; i < 10; i++) await store.commit(() => memory.write('sandbox', 'key_test', { namespace: 'notes', key: `n${i}`, text: `note ${i}` }, null));
  const firstPage = memory.listPage('sandbox', { limit: 4 });
  for (let i = 0; i < 100; i++) {
    await decide(store, memory, i);
    await memory.settled();
    if (memory.space('sandbox').decisions > MOST) t.fail(`decision ${i}: ${memory.space('sandbox').decisions} held, more than ${MOST}`);
  }
  t.pass(`never more than ${MOST} decisions held`);
  const held = heldDecisions(memory);
  t.ok(held.length >= 20 && held.length < 100, `between 20 and ${MOST} decisions held (${held.length})`);
  t.same(held, Array.from({ length: held.length }, (_, i) => 100 - held.length + i), 'the newest ones, in order');
  const horizon = memory.space('sandbox').horizon;
  t.ok(horizon > 0, 'a horizon was set');
  t.equal(memory.revision('sandbox'), 10 + 1 + 200, 'revisions still count every version written, held or not');

  t.same(await find(memory, 'word99'), ['dec_99'], 'a held decision is found');
  t.same(await find(memory, 'word3'), [], 'a dropped one is not');
  const semantic = await memory.query('sandbox', { query: 'decision 97 word97', topK: 1, weights: { semantic: 1, lexical: 0, graph: 0 }, graph: { expand: 0 } });
  t.same(semantic.results.map((hit) => hit.item.key), ['dec_97'], 'and by its vector, through the cells the compaction carried over');
  t.ok(memory.space('sandbox').vectors.approximate, 'search stayed approximate');

  t.equal(memory.list('sandbox', 'notes').length, 10, 'items of other namespaces are all held');
  const riskId = memory.idForKey('sandbox', 'risk', 'score')!;
  t.equal(memory.get('sandbox', riskId).version, 100, 'an item with a version per decision still reads its latest');
  const riskHistory = memory.space('sandbox').history(riskId, memory.revision('sandbox'));
  t.ok(riskHistory.length < 100 && riskHistory.length >= held.length, `its versions superseded before the horizon left the query side (${riskHistory.length} held)`);
  t.equal(memory.versions('sandbox', riskId).length, 100, 'and stay in LMDB');
  const policyId = memory.idForKey('sandbox', 'policies', 'p')!;
  const governed = memory.linkedFrom('sandbox', policyId, 'governed_by').map(({ item }) => Number(item.key.slice(4)));
  t.same(governed.sort((a, b) => a - b), held, 'the graph links the held decisions only');

  t.throws(() => memory.revision('sandbox', horizon - 1), { code: 'invalid_request', message: /before memory's retention horizon/ }, 'asOf before the horizon is refused');
  t.doesNotThrow(() => memory.revision('sandbox', horizon), 'asOf at the horizon is answered');
  const before = new Date(memory.space('sandbox').time(0) - 1).toISOString();
  t.throws(() => memory.revision('sandbox', before), { code: 'invalid_request' }, 'so is a time before it');

  const rest = memory.listPage('sandbox', { limit: 200, cursor: firstPage.nextCursor! });
  const listed = [...firstPage.items, ...rest.items].map((item) => item.key);
  t.same(listed.slice(0, 10), Array.from({ length: 10 }, (_, i) => `n${i}`), 'a listing begun before the compactions resumes where it was');
  t.equal(new Set(listed).size, listed.length, 'and repeats nothing');

  // A dropped decision recorded again (approved long after) is a version of its own item.
  const dropped = memory.items.versions('sandbox', memory.idForKey('sandbox', 'decisions', 'dec_3')!);
  t.equal(dropped.length, 1, 'the dropped decision is still in LMDB, found by its key');
  t.match(memory.get('sandbox', dropped[0]!.id, { asOf: memory.revision('sandbox') }), { key: 'dec_3', version: 1 }, 'read as of now from LMDB');
  const again = await decide(store, memory, 3, 'approved');
  t.equal(again.id, dropped[0]!.id, 'recorded again: the same item');
  t.equal(again.version, 2, 'its next version');
  t.same(await find(memory, 'word3'), ['dec_3'], 'and it is back in the query side');

  const heldBefore = heldDecisions(memory);
  await memory.close();
  await store.close();
  ({ store, memory } = open(dir));
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
  t.same(sorted(heldDecisions(memory)), [3, ...range(81, 99)], 'a restart holds the 20 written last (dec_3 the very last)');
  t.ok(heldBefore.length > 20, 'where the process before held more');
  const next = await store.commit(() => memory.write('sandbox', 'key_test', { namespace: 'notes', key: 'after', text: 'after the restart' }, null));
  t.equal(next.revision, 10 + 1 + 200 + 2 + 1, 'and numbers revisions on from every version stored');
  await memory.close();
  await store.close();

  ({ store, memory } = open(dir, 5));
  t.same(sorted(heldDecisions(memory)), [3, 96, 97, 98, 99], 'a restart with a smaller number holds fewer');
  const early = memory.idForKey('sandbox', 'decisions', 'dec_50');
  t.ok(early && memory.items.latest('sandbox', early)?.key === 'dec_50', 'the keys of decisions left out at start still lead to their items');
  t.equal(memory.list('sandbox', 'notes').length, 11, 'every note is held');
  await memory.close();
  await store.close();
});

t.test('versions that arrive while a compaction runs are taken on by the compacted space', async (t) => {
  const space = new MemorySpace(DIMENSIONS, { annThreshold: 10, probes: 64 });
  const vectorOf = async (text: string) => (await embedder.embed([text]))[0]!;
  let revision = 0;
  const item = (namespace: string, key: string, version: number, text: string): MemoryItem => ({
    id: `mem_${namespace}_${key}`,
    env: 'sandbox',
    namespace,
    key,
    version,
    revision: ++revision,
    text,
    attributes: {},
    links: [],
    tombstone: false,
    createdAt: new Date(1_700_000_000_000 + revision).toISOString(),
    createdBy: 'key_test',
  });
  for (let i = 0; i < 30; i++) space.add(item('decisions', `d${i}`, 1, `decision d${i}`), await vectorOf(`decision d${i}`));
  await space.vectors.settled();
  t.ok(space.vectors.approximate, 'the space searches approximately');
  const evicted: string[] = [];
  const steps = space.compaction(10, (version) => evicted.push(version.id));
  steps.next();
  steps.next();
  // Meanwhile: a new decision, a new version of a held one and of a dropped one, and a replaced vector.
  const arrivals = [item('decisions', 'd30', 1, 'decision d30'), item('decisions', 'd25', 2, 'decision d25 approved'), item('decisions', 'd2', 2, 'decision d2 approved')];
  for (const arrival of arrivals) space.add(arrival, await vectorOf(arrival.text));
  const replaced = await vectorOf('replaced vector');
  space.setVector(space.docOf('mem_decisions_d27', 1)!, replaced);
  let step = steps.next();
  while (!step.done) step = steps.next();
  const next = step.value!;
  t.ok(next, 'a compacted space');
  t.equal(evicted.length, 20, 'the 20 oldest decisions were dropped');
  t.equal(next.revision, space.revision, 'it has written as far as the space it replaces');
  t.equal(next.decisions, 12, 'it holds the 10 newest, the arrival and the dropped decision written again');
  for (const arrival of arrivals) t.equal(next.latestVersion(arrival.id), arrival.version, `${arrival.key} version ${arrival.version} was taken on`);
  t.equal(next.history('mem_decisions_d2', next.revision).length, 1, 'of the dropped one, only its new version');
  const word = (token: string) => next.lexical.scores([token], () => true).top(5).map((hit) => next.doc(hit.doc).id);
  t.same(word('d30'), ['mem_decisions_d30'], 'an arrival is indexed lexically');
  t.same(word('approved').sort(), ['mem_decisions_d2', 'mem_decisions_d25'], 'and so are new versions');
  const d27 = next.docOf('mem_decisions_d27', 1)!;
  t.ok(Math.abs(next.vectors.similarity(d27, replaced)! - 1) < 1e-5, 'a vector replaced meanwhile is the new one');
  t.ok(next.vectors.approximate, 'the cells were carried over');
  t.same(next.vectors.search(replaced, 1, () => true).map((hit) => next.doc(hit.doc).id), ['mem_decisions_d27'], 'and file the replaced vector where it now belongs');
  t.equal(next.revisionOf(next.docOf('mem_decisions_d2', 2)!), arrivals[2]!.revision, 'documents keep their revisions');
});

t.test('a server bounds the decisions memory holds and still records an approval of one it dropped', async (t: Test) => {
  const engine = await bundledEngine();
  t.teardown(() => engine.close());
  const { url, admin, server } = await startTestServer(t, { policies: engine, memoryDecisions: 2 });
  const scopes = ['decisions:read', 'decisions:write', 'decisions:approve', 'memory:read'];
  const creator = await issueKey(url, admin, { env: 'sandbox', scopes });
  const approver = await issueKey(url, admin, { env: 'sandbox', scopes, roles: ['finance-approver'] });
  const body = (i: number) => ({ title: `Pay invoice ${i}`, policy: 'spend-approval-v1', context: [{ source: 'finance:amount', value: 4200 + i }], inputs: ['vendor:acme'] });
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) {
    const answer = await call(url, 'POST', '/v1/decisions', { key: creator.key, body: body(i) });
    t.equal(answer.status, 200, answer.text);
    ids.push(answer.json.id);
    await server.services.memory.settled();
  }
  const memory = server.services.memory;
  t.ok(memory.space('sandbox').decisions <= 2 * COMPACT_AT, `at most ${2 * COMPACT_AT} of 12 decisions held (${memory.space('sandbox').decisions})`);
  const firstItem = memory.idForKey('sandbox', 'decisions', ids[0]!)!;
  t.notOk(memory.holds('sandbox', firstItem), 'the first decision left the query side');
  const approved = await call(url, 'POST', `/v1/decisions/${ids[0]}/approve`, { key: approver.key, body: { comment: 'late, but fine' } });
  t.equal(approved.status, 200, approved.text);
  await memory.settled();
  const versions = memory.versions('sandbox', firstItem);
  t.same(versions.map((item) => [item.version, item.attributes.status]), [[1, 'created'], [2, 'approved']], 'the approval is the next version of the same item');
  const listed = await call(url, 'GET', '/v1/memory?namespace=decisions&limit=50', { key: creator.key });
  t.equal(listed.status, 200, listed.text);
  const keys = listed.json.data.map((item: { key: string }) => item.key);
  t.ok(keys.includes(ids[0]) && keys.includes(ids[11]), 'it is held again, with the newest');
  t.equal(new Set(keys).size, keys.length, 'once');
  const early = await call(url, 'POST', '/v1/memory/query', { key: creator.key, body: { query: 'invoice', asOf: 1 } });
  t.equal(early.status, 400, 'asOf before the horizon over HTTP');
  t.match(early.json, { detail: /retention horizon/, horizon: Number });
});
