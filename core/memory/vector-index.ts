import { TopK, type Scored } from './top-k.ts';

/**
 * Exact nearest-neighbour search: every document's unit vector in one contiguous Float32Array,
 * scored by dot product (= cosine). A scan of 100,000 100-d vectors is 10⁷ multiply-adds, a few
 * milliseconds; the memory bench (bench/scenarios/memory.ts) measures where that stops being fast
 * enough. Vectors persist in LMDB (core/memory/item-store.ts); this is their in-memory form.
 */
export class ExactVectorIndex {
  private matrix: Float32Array;
  /** Document number → row, or -1 for a document without a vector yet. */
  private rows: Int32Array;
  private count = 0;

  constructor(readonly dimensions: number) {
    this.matrix = new Float32Array(dimensions * 1024);
    this.rows = new Int32Array(1024).fill(-1);
  }

  has(doc: number): boolean {
    return doc < this.rows.length && this.rows[doc]! >= 0;
  }

  /** Stores (or replaces) the vector of `doc`. */
  set(doc: number, vector: Float32Array): void {
    if (vector.length !== this.dimensions) throw new Error(`expected a ${this.dimensions}-d vector, got ${vector.length}`);
    if (doc >= this.rows.length) {
      const rows = new Int32Array(Math.max(doc + 1, this.rows.length * 2)).fill(-1);
      rows.set(this.rows);
      this.rows = rows;
    }
    let row = this.rows[doc]!;
    if (row < 0) {
      row = this.count++;
      if (this.count * this.dimensions > this.matrix.length) {
        const matrix = new Float32Array(this.matrix.length * 2);
        matrix.set(this.matrix);
        this.matrix = matrix;
      }
      this.rows[doc] = row;
    }
    this.matrix.set(vector, row * this.dimensions);
  }

  /** Cosine of `doc` to `query`, or null when `doc` has no vector. */
  similarity(doc: number, query: Float32Array): number | null {
    if (!this.has(doc)) return null;
    const base = this.rows[doc]! * this.dimensions;
    let sum = 0;
    for (let i = 0; i < this.dimensions; i++) sum += this.matrix[base + i]! * query[i]!;
    return sum;
  }

  /** The `k` accepted documents most similar to `query`, best first. */
  search(query: Float32Array, k: number, accept: (doc: number) => boolean): Scored[] {
    const top = new TopK(k);
    const { matrix, rows, dimensions } = this;
    for (let doc = 0; doc < rows.length; doc++) {
      const row = rows[doc]!;
      if (row < 0 || !accept(doc)) continue;
      const base = row * dimensions;
      let sum = 0;
      for (let i = 0; i < dimensions; i++) sum += matrix[base + i]! * query[i]!;
      top.offer(doc, sum);
    }
    return top.sorted();
  }
}
