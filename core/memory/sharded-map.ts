/**
 * A Map from strings split over a fixed number of smaller Maps by a hash of the key, for the
 * indexes memory keeps per item (one entry per decision recorded, so hundreds of thousands).
 *
 * Why not one Map: V8 grows a Map by rehashing every entry into a table twice the size, in one
 * go. At 131,072 items that took 5–6 ms per Map, 21 ms at 262,144, and memory's indexes grew in
 * lockstep, so one event-loop turn paid for all of them (40–50 ms, every request waiting). Split
 * 256 ways, each shard rehashes a 256th of the entries, and as shards fill unevenly their
 * rehashes fall on different turns. It also lifts V8's limit of 2^24 entries per Map.
 */
const SHARDS = 256;
const SHARD_SHIFT = 24;
/** How many of a key's last code units pick its shard. */
const HASHED_TAIL = 8;

export class ShardedMap<V> {
  private readonly shards: Array<Map<string, V>> = Array.from({ length: SHARDS }, () => new Map());

  get(key: string): V | undefined {
    return this.shard(key).get(key);
  }

  has(key: string): boolean {
    return this.shard(key).has(key);
  }

  set(key: string, value: V): this {
    this.shard(key).set(key, value);
    return this;
  }

  /** Every entry, shard by shard; entries set while iterating may or may not be met. */
  *entries(): IterableIterator<[string, V]> {
    for (const shard of this.shards) yield* shard;
  }

  private shard(key: string): Map<string, V> {
    // FNV-1a over the last few UTF-16 code units: ids end in random hex, and keys that share a
    // long prefix differ at their end. Hashing whole keys cost 3% of a decision's CPU (the
    // lookups recording a decision make). The top byte picks the shard: FNV's low bits mix less.
    let hash = 0x811c9dc5;
    for (let i = Math.max(0, key.length - HASHED_TAIL); i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
    return this.shards[hash >>> SHARD_SHIFT]!;
  }
}
