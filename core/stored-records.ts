import type { Database, Key, Transaction } from 'lmdb';

/** A stored record as read back: its value, or why the value could not be decoded. */
export type StoredRecord<V> = { key: Key; value: V; error?: undefined } | { key: Key; value?: undefined; error: string };

/**
 * Every record of `db` in key order, within `transaction`, for readers that must report damage
 * rather than stop at it (`gatehouse audit verify` and `export`). lmdb-js decodes a value as its
 * range iterator reaches it and throws from the iterator when it cannot, which ends the range;
 * the record that failed is the next key, so it is named and the range resumes after it.
 */
export function* readStoredRecords<V>(db: Database<V, Key>, transaction: Transaction): Generator<StoredRecord<V>, void, undefined> {
  let after: Key | undefined;
  const from = () => (after === undefined ? {} : { start: after, exclusiveStart: true });
  for (;;) {
    try {
      for (const { key, value } of db.getRange({ transaction, ...from() })) {
        after = key;
        yield { key, value };
      }
      return;
    } catch (error) {
      const [failed] = db.getKeys({ transaction, limit: 1, ...from() });
      if (failed === undefined) throw error;
      after = failed;
      yield { key: failed, error: (error as Error).message };
    }
  }
}
