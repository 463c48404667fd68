import type { Database, Key, RangeOptions } from 'lmdb';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Store } from './store.ts';

/** Records a chunked scan reads per event-loop turn: a few milliseconds of work. */
const SCAN_CHUNK = 2_000;

/**
 * The records of `range` in `db`, a chunk at a time, with an event-loop turn between chunks:
 * each chunk is a fresh read resuming after the last key of the one before, so a scan over
 * millions of records never holds other requests for longer than one chunk.
 */
export async function* inChunks<V, K extends Key>(db: Database<V, K>, range: Pick<RangeOptions, 'start' | 'end'> = {}, size = SCAN_CHUNK): AsyncGenerator<Array<{ key: K; value: V }>> {
  let after: K | undefined;
  for (;;) {
    const entries = [...db.getRange({ ...range, ...(after === undefined ? {} : { start: after, exclusiveStart: true }), limit: size })];
    if (entries.length > 0) yield entries;
    if (entries.length < size) return;
    after = entries.at(-1)!.key;
    await nextTurn();
  }
}

/**
 * Removes the records of `db` that `expired` says have expired, a chunk per event-loop turn
 * (`inChunks`), each chunk's in one commit: one pass over them all (a day of Idempotency-Keys)
 * held the server for seconds. Resolves to how many were removed.
 */
export async function sweepExpired<V, K extends Key>(store: Store, db: Database<V, K>, expired: (value: V) => boolean, chunk = SCAN_CHUNK): Promise<number> {
  let removed = 0;
  for await (const entries of inChunks(db, {}, chunk)) {
    const doomed = entries.filter(({ value }) => expired(value)).map(({ key }) => key);
    if (doomed.length) {
      await store.commit(() => doomed.forEach((key) => db.remove(key)));
      removed += doomed.length;
    }
    if (!store.isOpen) break;
  }
  return removed;
}
