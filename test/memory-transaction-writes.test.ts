import t from 'tap';
import type { MemoryItem } from '../core/memory/item.ts';
import { NOTHING_WRITTEN, withWrite, writtenAtKey, writtenOfItem } from '../core/memory/transaction-writes.ts';

// What a write transaction has written to memory, found by key and by item; a nested transaction
// that rolls back leaves the value it started from, and what it wrote must not be found.

const version = (id: string, key: string, v: number, env: 'sandbox' | 'production' = 'sandbox'): MemoryItem => ({
  id,
  env,
  namespace: 'notes',
  key,
  version: v,
  revision: 0,
  text: `${key} v${v}`,
  attributes: {},
  links: [],
  tombstone: false,
  createdAt: '2026-01-01T00:00:00.000Z',
  createdBy: 'key_test',
});

t.test('the newest version by key and by item, per environment', async (t) => {
  let pending = withWrite(NOTHING_WRITTEN, version('mem_a', 'a', 1));
  pending = withWrite(pending, version('mem_b', 'b', 1));
  pending = withWrite(pending, version('mem_a', 'a', 2));
  t.equal(writtenAtKey(pending, 'sandbox', 'notes', 'a')?.version, 2);
  t.equal(writtenOfItem(pending, 'sandbox', 'mem_b')?.text, 'b v1');
  t.equal(writtenAtKey(pending, 'production', 'notes', 'a'), undefined, 'another environment holds nothing');
  t.same(pending.written, { sandbox: 3, production: 0 });
  t.equal(writtenAtKey(NOTHING_WRITTEN, 'sandbox', 'notes', 'a'), undefined, 'nothing written, nothing found');
});

t.test('what a rolled-back nested transaction wrote is not found, and the next write replaces it', async (t) => {
  const before = withWrite(NOTHING_WRITTEN, version('mem_a', 'a', 1));
  // The nested transaction writes two versions and rolls back: the store restores `before`.
  withWrite(withWrite(before, version('mem_a', 'a', 2)), version('mem_c', 'c', 1));
  t.equal(writtenAtKey(before, 'sandbox', 'notes', 'a')?.version, 1, 'the version written before it');
  t.equal(writtenAtKey(before, 'sandbox', 'notes', 'c'), undefined, 'an item it created is unknown');
  const after = withWrite(before, version('mem_d', 'd', 1));
  t.equal(writtenAtKey(after, 'sandbox', 'notes', 'c'), undefined, 'a position it used, now holding another item, is not taken for it');
  t.equal(writtenOfItem(after, 'sandbox', 'mem_a')?.version, 1);
  t.equal(writtenAtKey(after, 'sandbox', 'notes', 'd')?.version, 1);
  t.same(after.written, { sandbox: 2, production: 0 });
});
