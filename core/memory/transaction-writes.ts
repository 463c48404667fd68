import type { Env } from '../env.ts';
import type { MemoryItem } from './item.ts';

/**
 * The memory versions a write transaction has written, found by key and by item before the
 * spaces take them on at commit (core/memory/memory.ts). A transaction may write thousands (a
 * recording of decisions that queued up under load), so lookups go through maps, not a walk.
 *
 * The store keeps a transaction's values immutable, so that a nested transaction that rolls back
 * restores the value it started from (core/store.ts, `transactionValue`). What it holds here is
 * a `PendingWrites`: the log shared by the whole transaction and how much of it counts. Versions
 * a rolled-back nested transaction appended lie beyond `length`; the next write cuts them off,
 * and a lookup checks that a position still holds what it was filed under.
 */
export interface PendingWrites {
  readonly log: WriteLog | null;
  /** How many versions of `log` this transaction holds. */
  readonly length: number;
  /** Of those, per environment. */
  readonly written: Readonly<Record<Env, number>>;
}

interface WriteLog {
  readonly versions: MemoryItem[];
  /** Environment → `namespace\0key` → positions in `versions`, oldest first. */
  readonly byKey: Record<Env, Map<string, number[]>>;
  /** Environment → item id → positions in `versions`, oldest first. */
  readonly byItem: Record<Env, Map<string, number[]>>;
}

export const NOTHING_WRITTEN: PendingWrites = { log: null, length: 0, written: { sandbox: 0, production: 0 } };

// Ids are looked up as the strings they already are, whose hashes V8 keeps: no key is built for them.
const labelOf = (namespace: string, key: string) => `${namespace}\0${key}`;

/** `pending` with `item` written after what it holds. */
export function withWrite(pending: PendingWrites, item: MemoryItem): PendingWrites {
  const log: WriteLog = pending.log ?? { versions: [], byKey: { sandbox: new Map(), production: new Map() }, byItem: { sandbox: new Map(), production: new Map() } };
  log.versions.length = pending.length;
  const at = log.versions.push(item) - 1;
  file(log.byKey[item.env], labelOf(item.namespace, item.key), at);
  file(log.byItem[item.env], item.id, at);
  return { log, length: at + 1, written: Object.assign({}, pending.written, { [item.env]: pending.written[item.env] + 1 }) };
}

function file(index: Map<string, number[]>, name: string, at: number): void {
  const positions = index.get(name);
  if (positions) positions.push(at);
  else index.set(name, [at]);
}

/** The newest version written of the item at (namespace, key). */
export function writtenAtKey(pending: PendingWrites, env: Env, namespace: string, key: string): MemoryItem | undefined {
  if (pending.written[env] === 0) return undefined;
  return newest(pending, pending.log!.byKey[env].get(labelOf(namespace, key)), (item) => item.namespace === namespace && item.key === key);
}

/** The newest version written of item `id`. */
export function writtenOfItem(pending: PendingWrites, env: Env, id: string): MemoryItem | undefined {
  if (pending.written[env] === 0) return undefined;
  return newest(pending, pending.log!.byItem[env].get(id), (item) => item.id === id);
}

function newest(pending: PendingWrites, positions: number[] | undefined, matches: (item: MemoryItem) => boolean): MemoryItem | undefined {
  if (!positions) return undefined;
  for (let i = positions.length - 1; i >= 0; i--) {
    const at = positions[i]!;
    if (at < pending.length && matches(pending.log!.versions[at]!)) return pending.log!.versions[at];
  }
  return undefined;
}
