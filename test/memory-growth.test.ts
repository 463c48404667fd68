import t from 'tap';
import { AppendList } from '../core/memory/append-list.ts';
import { Bm25Index } from '../core/memory/bm25.ts';
import { normalise } from '../core/memory/embedder.ts';
import type { MemoryItem } from '../core/memory/item.ts';
import { ShardedMap } from '../core/memory/sharded-map.ts';
import { MemorySpace } from '../core/memory/space.ts';
import { VectorIndex } from '../core/memory/vector-index.ts';
import { VectorRows } from '../core/memory/vector-rows.ts';
import { Rng } from './helpers/fuzz.ts';

// Memory's in-process indexes grow a block or a shard at a time instead of copying everything at
// once (core/memory/append-list.ts, sharded-map.ts, vector-rows.ts). These tests check that the
// answers do not change where one block ends and the next begins.

t.test('an append list reads back what was pushed across block boundaries', async (t) => {
  const list = new AppendList<number>();
  t.equal(list.last(), undefined, 'an empty list has no last entry');
  for (let i = 0; i < 10_000; i++) list.push(i * 3);
  t.equal(list.length, 10_000);
  t.equal(list.get(4095), 4095 * 3, 'the last entry of the first block');
  t.equal(list.get(4096), 4096 * 3, 'the first entry of the second block');
  t.equal(list.last(), 9_999 * 3);
  list.set(8192, -1);
  t.equal(list.get(8192), -1, 'set replaces an entry in a later block');
  t.same(list.chunks().map((chunk) => chunk.length), [4096, 4096, 1808], 'blocks of 4,096');
  let sum = 0;
  for (const value of list) sum += value;
  t.equal(sum, (3 * 9_999 * 10_000) / 2 - 8192 * 3 - 1, 'iteration visits every entry once, in order');
});

t.test('a sharded map finds every key it was given, and no other', async (t) => {
  const map = new ShardedMap<number>();
  const keys = Array.from({ length: 5_000 }, (_, i) => (i % 2 ? `mem_${i.toString(36)}` : `ns\0key-${i}`));
  keys.forEach((key, i) => map.set(key, i));
  t.ok(keys.every((key, i) => map.get(key) === i && map.has(key)), 'every key maps to its value');
  t.equal(map.get('mem_absent'), undefined);
  t.notOk(map.has(''), 'the empty key was never set');
  map.set('', -1);
  t.equal(map.get(''), -1, 'the empty key is a key like any other');
});

t.test('vectors stored over many blocks are scored where they lie, exactly and through the IVF', async (t) => {
  const dimensions = 1024;
  const rows = new VectorRows(dimensions);
  t.equal(rows.rowsPerBlock, 256, 'a block of 1024-d vectors holds 256 rows (a megabyte)');
  const rng = new Rng(7);
  const vectors = Array.from({ length: 1_100 }, () => normalise(Float32Array.from({ length: dimensions }, () => rng.next() - 0.5)));
  const index = new VectorIndex(dimensions, { annThreshold: 600, probes: 1_000 });
  vectors.forEach((vector, doc) => index.set(doc, vector));
  t.equal(index.size, 1_100);
  const query = vectors[700]!;
  const brute = vectors
    .map((vector, doc) => ({ doc, score: vector.reduce((sum, x, i) => sum + x * query[i]!, 0) }))
    .sort((a, b) => b.score - a.score)
    .slice(0, 10);
  const exact = index.exactSearch(query, 10, () => true);
  t.same(exact.map((hit) => hit.doc), brute.map((hit) => hit.doc), 'the exact scan ranks as a brute-force scan does');
  t.ok(Math.abs(index.similarity(257, query)! - vectors[257]!.reduce((sum, x, i) => sum + x * query[i]!, 0)) < 1e-5, 'similarity reads a row of the second block');
  await index.settled();
  t.ok(index.approximate, 'trained past the threshold');
  const approximate = index.search(query, 10, () => true);
  t.same(approximate.map((hit) => hit.doc), brute.map((hit) => hit.doc), 'probing every cell, the IVF answers as the exact scan does');
  index.set(300, vectors[700]!);
  t.equal(index.search(query, 2, () => true).map((hit) => hit.doc).sort((a, b) => a - b).join(), '300,700', 'a vector replaced in an earlier block is refiled');
});

function item(revision: number, id: string, key: string, links: MemoryItem['links'], tombstone = false): MemoryItem {
  return { id, env: 'sandbox', namespace: 'notes', key, version: 1, revision, text: `note ${key} about deploys`, attributes: {}, links, tombstone, createdAt: new Date(revision * 1000).toISOString(), createdBy: 'key_test' };
}

t.test('an item linked to by many versions of one source lists that source once', async (t) => {
  const space = new MemorySpace(4);
  space.add(item(1, 'mem_target', 'target', []), null);
  // Five thousand sources, each linking to the target twice (two relations), the last one in three versions.
  for (let i = 0; i < 5_000; i++) {
    space.add(item(space.revision + 1, `mem_s${i}`, `s${i}`, [{ to: 'mem_target', relation: 'uses', version: 1 }, { to: 'mem_target', relation: 'serves', version: 1 }]), null);
  }
  for (let v = 2; v <= 3; v++) space.add({ ...item(space.revision + 1, 'mem_s4999', 's4999', [{ to: 'mem_target', relation: 'uses', version: 1 }]), version: v }, null);
  const all = space.neighbours('mem_target', space.revision, null);
  t.equal(all.length, 4_999 * 2 + 1, 'one edge per relation of each source\'s live version');
  t.equal(new Set(all.map((edge) => space.doc(edge.doc).id)).size, 5_000, 'each source once');
  t.same(all.filter((edge) => space.doc(edge.doc).id === 'mem_s4999').map((edge) => edge.link.relation), ['uses'], 'the source\'s live version decides its edges');
  const early = space.neighbours('mem_target', 101, new Set(['serves']));
  t.equal(early.length, 100, 'as of revision 101, the first hundred sources, by the relation asked for');
  t.equal(space.liveIn('notes', space.revision).length, 5_001, 'every item is live');
  t.equal(space.revisionAt(Date.parse(new Date(4_097 * 1000).toISOString())), 4_097, 'revisionAt searches the times across blocks');
});

t.test('documents linking alike share their link objects; a different version or relation does not', async (t) => {
  const space = new MemorySpace(4);
  space.add(item(1, 'mem_policy', 'policy', []), null);
  const first = space.add(item(2, 'mem_d1', 'd1', [{ to: 'mem_policy', relation: 'governed_by', version: 1 }]), null);
  const second = space.add(item(3, 'mem_d2', 'd2', [{ to: 'mem_policy', relation: 'governed_by', version: 1 }, { to: 'mem_d1', relation: 'supersedes', version: 1 }]), null);
  const third = space.add(item(4, 'mem_d3', 'd3', [{ to: 'mem_policy', relation: 'governed_by', version: 2 }, { to: 'mem_policy', relation: 'uses', version: 1 }]), null);
  t.equal(space.doc(second).links[0], space.doc(first).links[0], 'the same link is one object');
  t.same(space.doc(second).links, [{ to: 'mem_policy', relation: 'governed_by', version: 1 }, { to: 'mem_d1', relation: 'supersedes', version: 1 }], 'and reads as written');
  t.not(space.doc(third).links[0], space.doc(second).links[0], 'another version is another link');
  t.same(space.doc(third).links.map((link) => [link.relation, link.version]), [['governed_by', 2], ['uses', 1]]);
  t.same(space.neighbours('mem_policy', space.revision, null).map((edge) => space.doc(edge.doc).id), ['mem_d1', 'mem_d2', 'mem_d3', 'mem_d3'], 'the graph reads them as before');
});

t.test('BM25 scores over documents numbered with gaps (deleted versions) as over dense ones', async (t) => {
  const dense = new Bm25Index();
  const gapped = new Bm25Index();
  const words = ['deploy', 'canary', 'rollback', 'web', 'api'];
  for (let i = 0; i < 9_000; i++) {
    const tokens = [words[i % 5]!, words[(i * 7) % 5]!, `w${i % 97}`];
    dense.add(i, tokens);
    gapped.add(i * 2 + 1, tokens);
  }
  const denseTop = dense.scores(['deploy', 'w3'], () => true).top(20);
  const gappedTop = gapped.scores(['deploy', 'w3'], () => true).top(20);
  t.same(gappedTop.map((hit) => (hit.doc - 1) / 2), denseTop.map((hit) => hit.doc), 'the same documents rank the same');
  t.same(gappedTop.map((hit) => hit.score), denseTop.map((hit) => hit.score), 'with the same scores');
  t.equal(gapped.scores(['deploy'], () => true).get(0), null, 'a number never added scores nothing');
});
