import { InvertedFileIndex } from './ivf-index.ts';
import { dot, offerRow } from './similarity.ts';
import { TopK, type Scored } from './top-k.ts';
import { VectorRows } from './vector-rows.ts';

/**
 * Nearest-neighbour search over every document's unit vector, kept in blocks that never move
 * (core/memory/vector-rows.ts) and scored by dot product (= cosine). Vectors persist in LMDB
 * (core/memory/item-store.ts); this is their in-memory form, rebuilt from there at start.
 *
 * Below `annThreshold` vectors a search is an exact scan. From it on, an inverted-file index
 * (core/memory/ivf-index.ts) trained on the vectors themselves answers instead; it is retrained
 * once the vectors have doubled since it was trained, so its cells stay about √n in number.
 * Training at start (`bulkLoad`) runs at once. While serving, a training is due from the first
 * search that finds the index out of date, not from the write that made it so: a space that is
 * written to and never searched by vector (decisions recorded at thousands a second, say) spends
 * nothing on k-means, which cost about 5% of a decision's CPU when every doubling trained at
 * once. It runs in slices of a few milliseconds between other work (a 100,000-vector training
 * takes seconds, which would stall every request), searches going on with the previous index (or
 * the exact scan) until the new one is ready and has filed the vectors that arrived or changed
 * meanwhile.
 * The memory bench (bench/scenarios/memory.ts, docs/memory.md) chose the defaults: the exact
 * scan costs ~5 ms at 10,000 vectors (quiet machine) and 35 ms at 100,000, where 16 probes of
 * the IVF cost about a sixth of it at a first-stage recall@100 of 0.86 and leave the hybrid's
 * nDCG@10 unchanged.
 */
export interface VectorIndexOptions {
  /** Vectors from which search is approximate. */
  annThreshold: number;
  /** Cells of the IVF scanned per query (at least). */
  probes: number;
}

export const VECTOR_INDEX_DEFAULTS: VectorIndexOptions = { annThreshold: 15_000, probes: 16 };

/** The longest a slice of training holds the event loop. */
const SLICE_MS = 4;

export class VectorIndex {
  private readonly vectors: VectorRows;
  /** Document number → row, or -1 for a document without a vector yet. */
  private rows: Int32Array;
  /** Row → document number. */
  private docs: Int32Array;
  private count = 0;
  private ivf: InvertedFileIndex | null = null;
  /** While loading in bulk, training waits for the end (see `bulkLoad`). */
  private loading = false;
  /** A training in slices under way: rows whose vectors changed since it began, and its end. */
  private training: { changed: Set<number>; done: Promise<void> } | null = null;
  /** How long the last training took, in ms. */
  trainingMs = 0;

  constructor(
    readonly dimensions: number,
    readonly options: VectorIndexOptions = VECTOR_INDEX_DEFAULTS,
  ) {
    this.vectors = new VectorRows(dimensions);
    this.rows = new Int32Array(1024).fill(-1);
    this.docs = new Int32Array(1024);
  }

  /** Vectors held. */
  get size(): number {
    return this.count;
  }

  /** Whether searches are answered by the approximate index. */
  get approximate(): boolean {
    return this.ivf !== null;
  }

  /** Cells of the approximate index (0 while searches are exact). */
  get cells(): number {
    return this.ivf?.cells ?? 0;
  }

  has(doc: number): boolean {
    return doc < this.rows.length && this.rows[doc]! >= 0;
  }

  /** Stores (or replaces) the vector of `doc`. */
  set(doc: number, vector: Float32Array): void {
    if (vector.length !== this.dimensions) throw new Error(`expected a ${this.dimensions}-d vector, got ${vector.length}`);
    this.store(doc, vector, 0);
  }

  /** Stores the `dimensions` floats of `source` from `offset` on as the vector of `doc`. */
  private store(doc: number, source: Float32Array, offset: number): void {
    if (doc >= this.rows.length) this.rows = grow(this.rows, doc + 1, -1);
    let row = this.rows[doc]!;
    if (row < 0) {
      row = this.count++;
      if (row >= this.docs.length) this.docs = grow(this.docs, row + 1, 0);
      this.rows[doc] = row;
      this.docs[row] = doc;
    }
    this.vectors.set(row, source, offset);
    if (this.loading) return;
    this.training?.changed.add(row);
    this.ivf?.place(this.vectors, row);
  }

  /** The vector of `doc`, as a view of where it is stored (valid until it is replaced), or null. */
  vector(doc: number): Float32Array | null {
    if (!this.has(doc)) return null;
    const row = this.rows[doc]!;
    const base = this.vectors.base(row);
    return this.vectors.block(row).subarray(base, base + this.dimensions);
  }

  /** Stores the vector `from` holds for its document `fromDoc` (if any) as this index's `doc`, as `set` would. */
  copy(from: VectorIndex, fromDoc: number, doc: number): void {
    if (!from.has(fromDoc)) return;
    const row = from.rows[fromDoc]!;
    this.store(doc, from.vectors.block(row), from.vectors.base(row));
  }

  /**
   * Takes on the approximate index of `from`, whose documents `moved` renumbers into this one's
   * (-1: not here): its cells, with each vector of this index filed where `from` had filed it.
   * Memory's compaction copies the vectors without placing them and then calls this, where
   * training anew would leave searches exact for seconds (core/memory/space.ts).
   */
  adoptCells(from: VectorIndex, moved: (doc: number) => number): void {
    if (!from.ivf) return;
    this.ivf = from.ivf.remapped((row) => {
      const to = moved(from.docs[row]!);
      return to >= 0 && this.has(to) ? this.rows[to]! : -1;
    }, this.count);
  }

  /** Resolves once the approximate index is up to date: a due training started and finished (tests, the bench). */
  async settled(): Promise<void> {
    this.trainIfDue();
    while (this.training) await this.training.done;
  }

  /**
   * Runs `load` (which sets many vectors, e.g. the rebuild at start) and trains the approximate
   * index once at the end if it is due, rather than at every doubling on the way.
   */
  bulkLoad(load: () => void): void {
    this.loading = true;
    try {
      load();
    } finally {
      this.loading = false;
    }
    if (this.due()) this.train();
  }

  /** Cosine of `doc` to `query`, or null when `doc` has no vector. */
  similarity(doc: number, query: Float32Array): number | null {
    if (!this.has(doc)) return null;
    const row = this.rows[doc]!;
    return dot(this.vectors.block(row), this.vectors.base(row), query, this.dimensions);
  }

  /** The `k` accepted documents most similar to `query`, best first: approximate from `annThreshold` vectors on. */
  search(query: Float32Array, k: number, accept: (doc: number) => boolean): Scored[] {
    this.trainIfDue();
    if (!this.ivf) return this.exactSearch(query, k, accept);
    return this.ivf.search(this.vectors, this.docs, query, k, this.options.probes, accept);
  }

  /** The `k` accepted documents most similar to `query`, best first, by scanning every vector. */
  exactSearch(query: Float32Array, k: number, accept: (doc: number) => boolean): Scored[] {
    const top = new TopK(k);
    for (let row = 0; row < this.count; row++) offerRow(top, this.vectors, row, this.docs[row]!, query, accept);
    return top.sorted();
  }

  /** Due for (re)training: past the threshold, and untrained or twice the rows it was trained on. */
  private due(): boolean {
    return this.count >= this.options.annThreshold && (!this.ivf || this.count >= 2 * this.ivf.trainedRows);
  }

  private trainIfDue(): void {
    if (this.due() && !this.training) this.trainInSlices();
  }

  private train(): void {
    const started = performance.now();
    this.ivf = InvertedFileIndex.train(this.vectors, this.count);
    this.trainingMs = performance.now() - started;
  }

  private trainInSlices(): void {
    const rows = this.count;
    const steps = InvertedFileIndex.training(this.vectors, rows);
    const changed = new Set<number>();
    let busyMs = 0;
    this.training = {
      changed,
      done: new Promise<void>((resolve) => {
        const slice = () => {
          const start = performance.now();
          let step = steps.next();
          while (!step.done && performance.now() - start < SLICE_MS) step = steps.next();
          busyMs += performance.now() - start;
          if (!step.done) return void setImmediate(slice);
          // Trained on the vectors as they were when it began: file what came or changed since.
          const ivf = step.value;
          for (let row = rows; row < this.count; row++) ivf.place(this.vectors, row);
          for (const row of changed) if (row < rows) ivf.place(this.vectors, row);
          this.ivf = ivf;
          this.trainingMs = busyMs;
          this.training = null;
          resolve();
        };
        setImmediate(slice);
      }),
    };
  }
}

/** `array` copied into one of at least `atLeast` entries (twice as many), the new ones `fill`. */
function grow(array: Int32Array, atLeast: number, fill: number): Int32Array {
  const grown = new Int32Array(Math.max(atLeast, array.length * 2));
  if (fill !== 0) grown.fill(fill, array.length);
  grown.set(array);
  return grown;
}
