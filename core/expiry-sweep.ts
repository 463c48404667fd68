import type { Database, Key } from 'lmdb';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Store } from './store.ts';

/** Records a sweep reads per event-loop turn: a few milliseconds of work. */
const SWEEP_CHUNK = 2_000;

/**
 * Removes the records of `db` that `expired` says have expired: a chunk of records is read per
 * event-loop turn and its expired ones removed in one commit, resuming after the last key read,
 * so a sweep over millions of records (a day of Idempotency-Keys) never holds other requests for
 * longer than one chunk, where one pass over them all held the server for seconds. Resolves to
 * how many were removed.
 */
export async function sweepExpired<V, K extends Key>(store: Store, db: Database<V, K>, expired: (value: V) => boolean, chunk = SWEEP_CHUNK): Promise<number> {
  let removed = 0;
  let after: K | undefined;
  for (;;) {
    const doomed: K[] = [];
    let read = 0;
    for (const { key, value } of db.getRange(after === undefined ? { limit: chunk } : { start: after, exclusiveStart: true, limit: chunk })) {
      read++;
      after = key;
      if (expired(value)) doomed.push(key);
    }
    if (doomed.length) {
      await store.commit(() => doomed.forEach((key) => db.remove(key)));
      removed += doomed.length;
    }
    if (read < chunk || !store.isOpen) return removed;
    await nextTurn();
  }
}
