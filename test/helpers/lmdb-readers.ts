import type { Store } from '../../core/store.ts';

/**
 * LMDB reader slots holding a snapshot. lmdb-js lists every slot its process uses; one it has
 * reset (no snapshot held, the idle state of its shared read transaction) shows `-` as its txnid.
 * A slot still holding a snapshot long after the request that took it is a leaked read transaction.
 */
export function activeReaders(store: Store): number {
  return store.root
    .readerList()
    .split('\n')
    .filter((line) => /^\s*\d+\s+\S+\s+\d+\s*$/.test(line)).length;
}

/** The active reader count once it is back to `idle` (lmdb-js resets its read transaction after a tick), or as it stands after 2 s. */
export async function settledReaders(store: Store, idle: number): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const active = activeReaders(store);
    if (active <= idle) return active;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return activeReaders(store);
}
