/**
 * Iterates an lmdb-js range (`getRange`, `getKeys`) so that its read transaction is released
 * whatever happens. lmdb-js releases it when the range is exhausted or its iterator's `return` is
 * called; when the iterator itself throws (a bound too large to encode as a key, a value that does
 * not decode), `for…of` calls neither, the reader slot stays taken for the life of the process and
 * once LMDB's 126 slots are gone every read fails with MDB_READERS_FULL. Old pages stay pinned
 * meanwhile, so the file also grows without bound.
 */
export function* readRange<T>(range: Iterable<T>): Generator<T, void, undefined> {
  const iterator = range[Symbol.iterator]();
  try {
    for (let step = iterator.next(); !step.done; step = iterator.next()) yield step.value;
  } finally {
    iterator.return?.();
  }
}
