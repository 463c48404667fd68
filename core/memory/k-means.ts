import { nearestTo } from './similarity.ts';
import type { VectorRows } from './vector-rows.ts';

/**
 * Spherical k-means (unit vectors, similarity by dot product, centroids re-normalised) over
 * chosen rows of a set of vectors. Deterministic: the first centroids are rows spread evenly
 * over the sample, and a cluster left empty (duplicate vectors make that common) is re-seeded
 * with the sample point its cluster fits worst, so the same rows always give the same centroids.
 */
export interface KMeansInput {
  vectors: VectorRows;
  /** The rows to cluster. */
  rows: ArrayLike<number>;
  k: number;
  iterations: number;
}

/** `min(k, rows)` unit centroids, row-major. */
export function sphericalKMeans({ vectors, rows, k, iterations }: KMeansInput): Float32Array {
  const { dimensions } = vectors;
  const n = rows.length;
  const count = Math.min(k, n);
  const centroids = new Float32Array(count * dimensions);
  for (let c = 0; c < count; c++) {
    const row = rows[Math.floor((c * n) / count)]!;
    const base = vectors.base(row);
    centroids.set(vectors.block(row).subarray(base, base + dimensions), c * dimensions);
  }
  const sums = new Float64Array(count * dimensions);
  const sizes = new Int32Array(count);
  const fit = new Float64Array(n);
  for (let iteration = 0; iteration < iterations; iteration++) {
    sums.fill(0);
    sizes.fill(0);
    for (let i = 0; i < n; i++) {
      const { row: c, similarity } = nearestTo(centroids, count, vectors, rows[i]!);
      fit[i] = similarity;
      sizes[c]!++;
      addRow(sums, c * dimensions, vectors, rows[i]!);
    }
    reseedEmpty(sizes, fit, rows, vectors, sums);
    for (let c = 0; c < count; c++) {
      const offset = c * dimensions;
      let norm = 0;
      for (let j = 0; j < dimensions; j++) norm += sums[offset + j]! * sums[offset + j]!;
      if (norm === 0) continue;
      const scale = 1 / Math.sqrt(norm);
      for (let j = 0; j < dimensions; j++) centroids[offset + j] = sums[offset + j]! * scale;
    }
  }
  return centroids;
}

/** Gives each empty cluster (its sum still 0) the worst-fitting sample point (a different one each), as its sum. */
function reseedEmpty(sizes: Int32Array, fit: Float64Array, rows: ArrayLike<number>, vectors: VectorRows, sums: Float64Array): void {
  const empty: number[] = [];
  for (let c = 0; c < sizes.length; c++) if (sizes[c] === 0) empty.push(c);
  if (empty.length === 0) return;
  const worst = Array.from({ length: fit.length }, (_, i) => i)
    .sort((a, b) => fit[a]! - fit[b]! || a - b)
    .slice(0, empty.length);
  empty.forEach((c, i) => {
    const point = worst[i];
    if (point === undefined) return;
    addRow(sums, c * vectors.dimensions, vectors, rows[point]!);
  });
}

/** Adds row `row` of `vectors` to `sums` from `offset` on. */
function addRow(sums: Float64Array, offset: number, vectors: VectorRows, row: number): void {
  const block = vectors.block(row);
  const base = vectors.base(row);
  for (let j = 0; j < vectors.dimensions; j++) sums[offset + j]! += block[base + j]!;
}

/** Rows spread evenly over `rows` (all of them when there are no more than `limit`). */
export function evenSample(rows: ArrayLike<number>, limit: number): Int32Array {
  const n = Math.min(rows.length, limit);
  const sample = new Int32Array(n);
  for (let i = 0; i < n; i++) sample[i] = rows[Math.floor((i * rows.length) / n)]!;
  return sample;
}
