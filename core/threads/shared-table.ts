import { hash } from 'node:crypto';

/**
 * A hash table in shared memory that every thread of one process reads and writes (`--threads`,
 * docs/api.md, *Threads*): string ids map to a fixed number of float64 fields. Entries are keyed
 * by 128 bits of the id's SHA-256, so ids of any length take one fixed slot and no id can be
 * crafted to share another's. Open addressing with linear probing and backward-shift deletion (no
 * tombstones), under one spin lock: every critical section is a few probes and field updates,
 * far shorter than a thread switch, so waiting threads spin rather than sleep (`Atomics.wait` is
 * refused on the main thread anyway).
 *
 * Written here because nothing on the registry shares a table between worker threads: a
 * SharedArrayBuffer holds numbers only.
 */
export interface SharedTableMemory {
  lock: SharedArrayBuffer;
  keys: SharedArrayBuffer;
  values: SharedArrayBuffer;
}

const KEY_WORDS = 4;

export class SharedTable {
  /** Word 0 is the lock, word 1 the number of entries. */
  private readonly lockWord: Int32Array;
  private readonly keys: Int32Array;
  /** The fields of slot `s` are `values[s * fields]` to `values[s * fields + fields - 1]`. */
  readonly values: Float64Array;
  private readonly mask: number;
  private readonly hash = new Int32Array(KEY_WORDS);

  private constructor(
    readonly memory: SharedTableMemory,
    readonly fields: number,
  ) {
    this.lockWord = new Int32Array(memory.lock);
    this.keys = new Int32Array(memory.keys);
    this.values = new Float64Array(memory.values);
    this.mask = this.keys.length / KEY_WORDS - 1;
  }

  /** A table of `slots` slots (a power of two) of `fields` numbers each. */
  static create(slots: number, fields: number): SharedTable {
    if (slots & (slots - 1)) throw new Error('a shared table has a power of two of slots');
    return new SharedTable(
      {
        lock: new SharedArrayBuffer(8),
        keys: new SharedArrayBuffer(slots * KEY_WORDS * 4),
        values: new SharedArrayBuffer(slots * fields * 8),
      },
      fields,
    );
  }

  /** The same table, seen from another thread (its memory came in `workerData`). */
  static attach(memory: SharedTableMemory, fields: number): SharedTable {
    return new SharedTable(memory, fields);
  }

  /** Runs `fn` holding the table's lock; `find`, `insert`, `remove` and `sweep` must run inside. */
  locked<T>(fn: () => T): T {
    while (Atomics.compareExchange(this.lockWord, 0, 0, 1) !== 0);
    try {
      return fn();
    } finally {
      Atomics.store(this.lockWord, 0, 0);
    }
  }

  /** The slot holding `id`, or -1. */
  find(id: string): number {
    this.hashOf(id);
    for (let slot = this.home(); ; slot = (slot + 1) & this.mask) {
      if (this.empty(slot)) return -1;
      if (this.holdsHash(slot)) return slot;
    }
  }

  /**
   * The slot holding `id`, made for it (its fields zero) when there was none; -1 when the table is
   * three quarters full, beyond which probing slows down: the caller goes on without an entry.
   */
  insert(id: string): number {
    const found = this.find(id);
    if (found >= 0) return found;
    if (this.lockWord[1]! * 4 >= (this.mask + 1) * 3) return -1;
    let slot = this.home();
    while (!this.empty(slot)) slot = (slot + 1) & this.mask;
    this.keys.set(this.hash, slot * KEY_WORDS);
    this.values.fill(0, slot * this.fields, (slot + 1) * this.fields);
    this.lockWord[1] = this.lockWord[1]! + 1;
    return slot;
  }

  /** Empties `slot`, moving later entries of its probe run back so none is cut off from its home. */
  remove(slot: number): void {
    let hole = slot;
    for (let next = (hole + 1) & this.mask; !this.empty(next); next = (next + 1) & this.mask) {
      const home = this.keys[next * KEY_WORDS]! & this.mask;
      // `next` may fill the hole only if the hole lies on its probe path (home … next).
      if (((next - home) & this.mask) < ((next - hole) & this.mask)) continue;
      this.keys.copyWithin(hole * KEY_WORDS, next * KEY_WORDS, (next + 1) * KEY_WORDS);
      this.values.copyWithin(hole * this.fields, next * this.fields, (next + 1) * this.fields);
      hole = next;
    }
    this.keys.fill(0, hole * KEY_WORDS, (hole + 1) * KEY_WORDS);
    this.lockWord[1] = this.lockWord[1]! - 1;
  }

  /** Calls `visit` with every occupied slot; `visit` returns true to remove it. */
  sweep(visit: (slot: number) => boolean): void {
    // Removing shifts later entries back into the slot just visited, which is then visited again.
    for (let slot = 0; slot <= this.mask; ) {
      if (!this.empty(slot) && visit(slot)) this.remove(slot);
      else slot++;
    }
  }

  private hashOf(id: string): void {
    const digest = hash('sha256', id, 'buffer') as unknown as Buffer;
    for (let i = 0; i < KEY_WORDS; i++) this.hash[i] = digest.readInt32LE(i * 4);
    // An all-zero key marks an empty slot.
    this.hash[0] |= 1;
  }

  private home(): number {
    return this.hash[0]! & this.mask;
  }

  private empty(slot: number): boolean {
    return this.keys[slot * KEY_WORDS] === 0;
  }

  private holdsHash(slot: number): boolean {
    const at = slot * KEY_WORDS;
    return this.keys[at] === this.hash[0] && this.keys[at + 1] === this.hash[1] && this.keys[at + 2] === this.hash[2] && this.keys[at + 3] === this.hash[3];
  }
}
