import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { normalise, type Embedder } from '../core/memory/embedder.ts';
import { Memory, type MemoryQuery } from '../core/memory/memory.ts';
import type { Scored } from '../core/memory/top-k.ts';
import { VectorIndex } from '../core/memory/vector-index.ts';
import { Store } from '../core/store.ts';
import { Rng } from './helpers/fuzz.ts';

// The approximate (IVF) vector index: recall against the exact scan, inserts after training,
// versions and tombstones, and a restart. Vectors come from a stub embedder that reads them off
// the text ("c<cluster> n<seed>": a cluster centre plus seeded noise), so the data are known.

const DIMENSIONS = 16;
const CLUSTERS = 40;

function noise(seed: number, scale: number): Float32Array {
  const rng = new Rng(seed);
  return Float32Array.from({ length: DIMENSIONS }, () => (rng.next() - 0.5) * scale);
}

const CENTRES = Array.from({ length: CLUSTERS }, (_, c) => normalise(noise(1_000_000 + c, 2)));

function vectorFor(cluster: number, seed: number): Float32Array {
  const vector = noise(seed, 0.6);
  const centre = CENTRES[cluster % CLUSTERS]!;
  for (let i = 0; i < DIMENSIONS; i++) vector[i]! += centre[i]!;
  return normalise(vector);
}

const embedder: Embedder = {
  id: 'stub-clusters-16d',
  dimensions: DIMENSIONS,
  async embed(texts) {
    return texts.map((text) => {
      const [, cluster, seed] = /c(\d+) n(\d+)/.exec(text) ?? [];
      return vectorFor(Number(cluster ?? 0), Number(seed ?? 0));
    });
  },
};

/** Of the exact top k, the share the approximate answer holds (a tie with the k-th counts). */
function recall(approximate: Scored[], exact: Scored[]): number {
  const floor = exact.at(-1)!.score;
  return Math.min(exact.length, approximate.filter((hit) => hit.score >= floor - 1e-6).length) / exact.length;
}

t.test('the IVF index finds the exact nearest neighbours with high recall, inserts included', async (t) => {
  const index = new VectorIndex(DIMENSIONS, { annThreshold: 2_000, probes: 8 });
  for (let doc = 0; doc < 1_999; doc++) index.set(doc, vectorFor(doc, doc));
  t.notOk(index.approximate, 'exact below the threshold');
  index.set(1_999, vectorFor(1_999, 1_999));
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.notOk(index.approximate, 'a write alone does not train, however long one waits');
  t.equal(index.search(vectorFor(0, 0), 1, () => true)[0]?.doc, 0, 'a search finds the index due: answered exactly, it starts the training');
  t.notOk(index.approximate, 'training runs in slices between other work; searches stay exact meanwhile');
  const duringTraining = vectorFor(11, 800_000);
  index.set(2_500, duringTraining);
  await index.settled();
  t.ok(index.approximate, 'approximate from the threshold on');
  t.same(index.search(duringTraining, 1, () => true).map((hit) => hit.doc), [2_500], 'a vector added while training is filed in the new index');
  t.equal(index.cells, 49, '√2000 ≈ 45 cells wanted: 7 coarse × 7 fine');
  for (let doc = 2_000; doc < 3_000; doc++) if (doc !== 2_500) index.set(doc, vectorFor(doc, doc));

  const queries = Array.from({ length: 60 }, (_, i) => vectorFor(i, 500_000 + i));
  const all = () => true;
  let total = 0;
  for (const query of queries) total += recall(index.search(query, 20, all), index.exactSearch(query, 20, all));
  t.ok(total / queries.length >= 0.9, `recall@20 ${(total / queries.length).toFixed(3)} ≥ 0.9`);

  // Inserted after training (3,000 < 2 × 2,000: no retraining): filed into a cell, found.
  const late = vectorFor(7, 900_000);
  index.set(3_000, late);
  t.same(index.search(late, 1, all).map((hit) => hit.doc), [3_000], 'a vector inserted after training is found');
  t.same(index.search(late, 5, (doc) => doc % 2 === 1).map((hit) => hit.doc % 2), [1, 1, 1, 1, 1], 'accept filters the answer');
  t.equal(index.search(late, 10, (doc) => doc === 42).length, 1, 'a filter accepting one document far away still finds it (probing goes on)');

  // Replaced vectors move to their new cell.
  index.set(3_000, vectorFor(23, 900_001));
  t.same(index.search(vectorFor(23, 900_001), 1, all).map((hit) => hit.doc), [3_000], 'a replaced vector is found by its new value');
  t.notSame(index.search(late, 1, all).map((hit) => hit.doc), [3_000], 'and no longer by its old one');

  for (let doc = 3_001; doc < 4_000; doc++) index.set(doc, vectorFor(doc, doc));
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.equal(index.cells, 49, 'the vectors doubled, and writes alone leave the old cells serving');
  index.search(late, 1, all);
  t.equal(index.cells, 49, 'the old cells serve until the retraining is done');
  for (let i = 0; i < 1_000 && index.cells !== 64; i++) await new Promise((resolve) => setTimeout(resolve, 5));
  t.equal(index.cells, 64, 'the search that found them doubled retrained the index, in slices: 8 × 8 cells');
});

t.test('approximate search in memory: new versions, tombstones and a restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-memory-ann-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const options = { vectors: { annThreshold: 1_000, probes: 4 } };
  let store = Store.open({ dataDir: dir });
  let memory = new Memory(store, embedder, options);
  const write = async (key: string, text: string) => {
    const [vector] = await embedder.embed([text]);
    return store.commit(() => memory.write('sandbox', 'key_test', { namespace: 'notes', key, text }, vector!));
  };
  for (let i = 0; i < 1_500; i++) await write(`k${i}`, `c${i % CLUSTERS} n${i}`);
  await memory.settled();
  t.ok(memory.space('sandbox').vectors.approximate, 'the space searches approximately');

  const semantic: MemoryQuery = { query: 'c3 n777777', topK: 10, weights: { semantic: 1, lexical: 0, graph: 0 }, graph: { expand: 0 } };
  const ask = async () => (await memory.query('sandbox', semantic)).results.map((hit) => ({ key: hit.item.key, version: hit.item.version, score: hit.score }));
  const first = await ask();
  t.equal(first.length, 10);
  t.ok(first.every(({ key }) => Number(key.slice(1)) % CLUSTERS === 3), 'every hit is from the query’s cluster');

  const moved = first[0]!.key;
  const deleted = first[1]!.key;
  await write(moved, 'c17 n123');
  const id = memory.idForKey('sandbox', 'notes', deleted)!;
  await store.commit(() => memory.delete('sandbox', 'key_test', id));
  const after = await ask();
  t.notOk(after.some(({ key }) => key === moved), 'the superseded version is not returned, its new version is elsewhere');
  t.notOk(after.some(({ key }) => key === deleted), 'the deleted item is not returned');
  const keys = (hits: typeof first) => hits.map(({ key, version }) => [key, version]);
  t.same(keys(after.slice(0, 8)), keys(first.slice(2)), 'the rest keep their order');
  const movedAnswer = await memory.query('sandbox', { ...semantic, query: 'c17 n123', topK: 1 });
  t.match(movedAnswer.results.map((hit) => [hit.item.key, hit.item.version]), [[moved, 2]], 'the new version is found by its new vector');

  await memory.close();
  await store.close();
  store = Store.open({ dataDir: dir });
  memory = new Memory(store, embedder, options);
  t.ok(memory.space('sandbox').vectors.approximate, 'rebuilt approximate at start');
  t.same(await ask(), after, 'the same answer after a restart');
  await memory.close();
  await store.close();
});
