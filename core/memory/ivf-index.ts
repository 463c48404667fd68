import { evenSample, sphericalKMeans } from './k-means.ts';
import { dot, nearestTo, offerRow } from './similarity.ts';
import { TopK, type Scored } from './top-k.ts';
import type { VectorRows } from './vector-rows.ts';

/**
 * An inverted-file (IVF) index over rows of vectors (core/memory/vector-rows.ts): the vectors are partitioned into
 * about √n cells by spherical k-means, and a query scores the cell centroids, then only the rows
 * of the `probes` most similar cells (more while fewer than k accepted documents were found, so
 * a narrow filter degrades towards a full scan instead of returning too few).
 *
 * Training is two-level so it stays cheap enough to redo at every start: √cells coarse centroids
 * over a sample, every row assigned to one, then each coarse cell split into √cells fine cells
 * trained on a sample of its own rows. Assigning a row costs ~2·√cells dot products instead of
 * `cells`. Searching ignores the hierarchy: it scores every fine centroid, so a row filed under a
 * neighbouring coarse cell is still found. Rows added after training go to their most similar
 * fine cell; the owner retrains once the rows have doubled (core/memory/vector-index.ts).
 */
export const IVF = {
  /** k-means passes at each level. */
  iterations: 6,
  /** Sample rows per centroid to train on, coarse and fine levels. */
  coarseSample: 64,
  fineSample: 48,
};

/** Rows filed between two steps of `training`: about a millisecond of work on the bench machine. */
const STEP_ROWS = 512;

export class InvertedFileIndex {
  /** Cell → its rows, in the order filed. */
  private readonly lists: number[][];
  /** Row → its cell (-1: a row not filed, which a compaction can leave). */
  private cellOf: number[] = [];

  private constructor(
    private readonly dimensions: number,
    private readonly centroids: Float32Array,
    /** How many rows the centroids were trained on. */
    readonly trainedRows: number,
    /** The coarse centroids, and for each the first of its fine cells and how many it has. */
    private readonly coarse: { centroids: Float32Array; first: Int32Array; count: Int32Array },
  ) {
    this.lists = Array.from({ length: centroids.length / dimensions }, () => []);
  }

  get cells(): number {
    return this.lists.length;
  }

  /** Trains cells on rows `0..rows` of `vectors` and files every one of them. Deterministic. */
  static train(vectors: VectorRows, rows: number): InvertedFileIndex {
    const steps = InvertedFileIndex.training(vectors, rows);
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value;
    }
  }

  /**
   * `train` in steps: the generator yields every `STEP_ROWS` rows filed (the parts that grow with
   * n), so a server can train between requests instead of stalling them (core/memory/vector-index.ts).
   */
  static *training(vectors: VectorRows, rows: number): Generator<void, InvertedFileIndex> {
    const { dimensions } = vectors;
    const all = Int32Array.from({ length: rows }, (_, row) => row);
    const wanted = Math.max(1, Math.round(Math.sqrt(rows)));
    const coarseK = Math.ceil(Math.sqrt(wanted));
    const fineK = Math.ceil(wanted / coarseK);
    const coarse = sphericalKMeans({ vectors, rows: evenSample(all, coarseK * IVF.coarseSample), k: coarseK, iterations: IVF.iterations });
    const coarseCount = coarse.length / dimensions;
    const groups: number[][] = Array.from({ length: coarseCount }, () => []);
    for (let row = 0; row < rows; row++) {
      groups[nearestTo(coarse, coarseCount, vectors, row).row]!.push(row);
      if (row % STEP_ROWS === STEP_ROWS - 1) yield;
    }

    const split: Array<{ coarseCell: number; group: number[]; centroids: Float32Array; first: number }> = [];
    let cells = 0;
    for (const [coarseCell, group] of groups.entries()) {
      if (group.length === 0) continue;
      const centroids = sphericalKMeans({ vectors, rows: evenSample(group, fineK * IVF.fineSample), k: fineK, iterations: IVF.iterations });
      split.push({ coarseCell, group, centroids, first: cells });
      cells += centroids.length / dimensions;
      yield;
    }
    const centroids = new Float32Array(cells * dimensions);
    for (const { centroids: fine, first } of split) centroids.set(fine, first * dimensions);
    const firstFine = new Int32Array(coarseCount);
    const fineCount = new Int32Array(coarseCount);
    for (const { coarseCell, centroids: fine, first } of split) {
      firstFine[coarseCell] = first;
      fineCount[coarseCell] = fine.length / dimensions;
    }
    const index = new InvertedFileIndex(dimensions, centroids, rows, { centroids: coarse, first: firstFine, count: fineCount });
    for (const { group, centroids: fine, first } of split) {
      const count = fine.length / dimensions;
      for (let i = 0; i < group.length; i++) {
        const row = group[i]!;
        index.file(row, first + nearestTo(fine, count, vectors, row).row);
        if (i % STEP_ROWS === STEP_ROWS - 1) yield;
      }
    }
    return index;
  }

  /**
   * Files `row` (new, or whose vector was replaced) the way training filed every row: under its
   * most similar coarse centroid, then the most similar fine cell of that one. That scores
   * ~2·√cells centroids per write instead of all of them (324 at 100,000 rows).
   */
  place(vectors: VectorRows, row: number): void {
    const { dimensions, coarse } = this;
    const group = nearestTo(coarse.centroids, coarse.first.length, vectors, row).row;
    const first = coarse.first[group]!;
    const count = coarse.count[group]!;
    const cell =
      count > 0
        ? first + nearestTo(this.centroids.subarray(first * dimensions, (first + count) * dimensions), count, vectors, row).row
        : nearestTo(this.centroids, this.cells, vectors, row).row;
    const previous = this.cellOf[row] ?? -1;
    if (previous === cell) return;
    if (previous >= 0) {
      const list = this.lists[previous]!;
      list.splice(list.indexOf(row), 1);
    }
    this.file(row, cell);
  }

  /** This index's cells with its rows renumbered by `moved` (-1: left out) into `rows` rows, for memory's compaction. */
  remapped(moved: (row: number) => number, rows: number): InvertedFileIndex {
    const copy = new InvertedFileIndex(this.dimensions, this.centroids, this.trainedRows, this.coarse);
    // Made as long as it must be first: filled out of order, V8 would hold it as a dictionary.
    copy.cellOf = new Array<number>(rows).fill(-1);
    for (const [cell, list] of this.lists.entries()) {
      for (const row of list) {
        const to = moved(row);
        if (to >= 0) copy.file(to, cell);
      }
    }
    return copy;
  }

  /**
   * The `k` accepted documents most similar to `query` among the rows of the `probes` cells
   * nearest to it (and further cells while fewer than `k` were accepted), best first.
   */
  search(vectors: VectorRows, docOf: Int32Array, query: Float32Array, k: number, probes: number, accept: (doc: number) => boolean): Scored[] {
    const { dimensions, lists } = this;
    const closeness = new Float64Array(lists.length);
    for (let cell = 0; cell < lists.length; cell++) closeness[cell] = dot(this.centroids, cell * dimensions, query, dimensions);
    const order = Array.from({ length: lists.length }, (_, cell) => cell).sort((a, b) => closeness[b]! - closeness[a]! || a - b);
    const top = new TopK(k);
    for (let i = 0; i < order.length && (i < probes || !top.full); i++) {
      for (const row of lists[order[i]!]!) offerRow(top, vectors, row, docOf[row]!, query, accept);
    }
    return top.sorted();
  }

  private file(row: number, cell: number): void {
    this.lists[cell]!.push(row);
    this.cellOf[row] = cell;
  }
}
