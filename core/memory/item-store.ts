import type { Database } from 'lmdb';
import type { Env } from '../env.ts';
import { readRange } from '../range-read.ts';
import type { Store } from '../store.ts';
import type { MemoryItem } from './item.ts';

/**
 * Memory in LMDB: every version of every item under [env, id, version], and, for a model that
 * runs outside the process, each version's embedding under the same key with the model that made
 * it (an in-process model's are worked out again: core/memory/embedder.ts). Nothing here is ever
 * overwritten except a vector re-made by a new model. Puts belong inside `store.commit`.
 */
type VersionKey = [Env, string, number];

export interface StoredVector {
  model: string;
  /** Float32 little-endian components. */
  vector: Uint8Array;
}

const LAST_VERSION = Number.MAX_SAFE_INTEGER;

/** Where memory's versions are stored: cluster mode reads other instances' from commits (core/memory/memory.ts). */
export const ITEMS_DATABASE = 'memory-items';
export const VECTORS_DATABASE = 'memory-vectors';

/** A stored vector's components, when `stored` is a vector of `model`. */
export function vectorOf(stored: StoredVector | undefined, model: string): Float32Array | undefined {
  if (!stored || stored.model !== model) return undefined;
  // Copy: the stored bytes need not be 4-byte aligned.
  return new Float32Array(new Uint8Array(stored.vector).buffer);
}

export class MemoryItemStore {
  private readonly items: Database<MemoryItem, VersionKey>;
  private readonly vectors: Database<StoredVector, VersionKey>;

  constructor(store: Store) {
    this.items = store.database<MemoryItem, VersionKey>(ITEMS_DATABASE);
    this.vectors = store.database<StoredVector, VersionKey>(VECTORS_DATABASE);
  }

  get(env: Env, id: string, version: number): MemoryItem | undefined {
    return this.items.get([env, id, version]);
  }

  /** The newest committed version, tombstones included. */
  latest(env: Env, id: string): MemoryItem | undefined {
    for (const { value } of readRange(this.items.getRange({ start: [env, id, LAST_VERSION], end: [env, id, 0], reverse: true, limit: 1 }))) return value;
    return undefined;
  }

  /** Every committed version, oldest first. */
  versions(env: Env, id: string): MemoryItem[] {
    return [...this.items.getRange({ start: [env, id, 0], end: [env, id, LAST_VERSION] }).map(({ value }) => value)];
  }

  /** Every version of every item in every environment, in key order (for rebuilding indexes). */
  all(): Iterable<MemoryItem> {
    return this.items.getRange({}).map(({ value }) => value);
  }

  put(item: MemoryItem): void {
    this.items.put([item.env, item.id, item.version], item);
  }

  vector(item: Pick<MemoryItem, 'env' | 'id' | 'version'>, model: string): Float32Array | undefined {
    return vectorOf(this.vectors.get([item.env, item.id, item.version]), model);
  }

  putVector(item: Pick<MemoryItem, 'env' | 'id' | 'version'>, model: string, vector: Float32Array): void {
    this.vectors.put([item.env, item.id, item.version], { model, vector: new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength) });
  }
}
