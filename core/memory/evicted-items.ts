import type { Database } from 'lmdb';
import type { Env } from '../env.ts';
import type { Store } from '../store.ts';
import type { MemoryItem } from './item.ts';

/** Where the keys of the items retention dropped lead: [env, namespace, key] → item id. Each instance's own. */
export const EVICTED_KEYS_DATABASE = 'memory-evicted-keys';

type DroppedItem = Pick<MemoryItem, 'id' | 'namespace' | 'key'>;

/**
 * The items retention dropped from memory's query side (core/memory/space.ts), which stay in
 * LMDB: where their keys lead, so that a decision recorded again (approved months later) adds a
 * version to its item instead of starting another, and whether an id or key may be one of them.
 *
 * That last question is asked for every new item written (a new decision's key and id are looked
 * up before it is created), and an LMDB read per lookup cost several microseconds per decision.
 * Ids and the keys of decisions sort by creation time (core/ids.ts), so a new one is above the
 * highest dropped so far, which answers it with a comparison; only lower ones are looked up.
 */
export class EvictedItems {
  private readonly keys: Database<string, [Env, string, string]>;
  /** `env\0namespace` → the highest key dropped there. */
  private readonly highestKey = new Map<string, string>();
  private readonly highestId = new Map<Env, string>();

  constructor(private readonly store: Store) {
    this.keys = store.database<string, [Env, string, string]>(EVICTED_KEYS_DATABASE);
  }

  /** Records items dropped from `env`'s query side, before they leave it: synchronously, so their keys lead somewhere at once. */
  record(env: Env, dropped: readonly DroppedItem[], onlyMissing = false): void {
    if (dropped.length === 0) return;
    this.store.root.transactionSync(() => {
      for (const item of dropped) {
        const key: [Env, string, string] = [env, item.namespace, item.key];
        if (!onlyMissing || !this.keys.doesExist(key)) this.keys.put(key, item.id);
      }
    });
    for (const item of dropped) {
      const bound = `${env}\0${item.namespace}`;
      if (item.key > (this.highestKey.get(bound) ?? '')) this.highestKey.set(bound, item.key);
      if (item.id > (this.highestId.get(env) ?? '')) this.highestId.set(env, item.id);
    }
  }

  /** The id of the dropped item at (namespace, key), if one was dropped. */
  idForKey(env: Env, namespace: string, key: string): string | undefined {
    const highest = this.highestKey.get(`${env}\0${namespace}`);
    return highest !== undefined && key <= highest ? this.keys.get([env, namespace, key]) : undefined;
  }

  /** Whether item `id` may be one that was dropped (false: it certainly is not). */
  mayBeDropped(env: Env, id: string): boolean {
    const highest = this.highestId.get(env);
    return highest !== undefined && id <= highest;
  }
}
