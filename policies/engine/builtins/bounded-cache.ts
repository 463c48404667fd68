/**
 * A small map that forgets its oldest entry once full. OPA caches compiled regular expressions
 * and globs the same way (a fixed number of entries, one evicted per insert when full), so a
 * policy fed ever-new patterns cannot grow memory without bound.
 */
export class BoundedCache<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly capacity: number) {}

  /** The cached value for `key`, computing and storing it on a miss. */
  getOrCreate(key: K, create: () => V): V {
    const hit = this.entries.get(key);
    if (hit !== undefined || this.entries.has(key)) return hit as V;
    const value = create();
    if (this.entries.size >= this.capacity) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, value);
    return value;
  }
}
