import { nearestRow } from './similarity.ts';

/**
 * Spherical k-means (unit vectors, similarity by dot product, centroids re-normalised) over
 * chosen rows of a row-major matrix. Deterministic: the first centroids are rows spread evenly
 * over the sample, and a cluster left empty (duplicate vectors make that common) is re-seeded
 * with the sample point its cluster fits worst, so the same rows always give the same centroids.
 */
export interface KMeansInput {
  matrix: Float32Array;
  dimensions: number;
  /** The rows to cluster. */
  rows: ArrayLike<number>;
  k: number;
  iterations: number;
}

/** `min(k, rows)` unit centroids, row-major. */
export function sphericalKMeans({ matrix, dimensions, rows, k, iterations }: KMeansInput): Float32Array {
  const n = rows.length;
  const count = Math.min(k, n);
  const centroids = new Float32Array(count * dimensions);
  for (let c = 0; c < count; c++) {
    const base = rows[Math.floor((c * n) / count)]! * dimensions;
    centroids.set(matrix.subarray(base, base + dimensions), c * dimensions);
  }
  const sums = new Float64Array(count * dimensions);
  const sizes = new Int32Array(count);
  const fit = new Float64Array(n);
  for (let iteration = 0; iteration < iterations; iteration++) {
    sums.fill(0);
    sizes.fill(0);
    for (let i = 0; i < n; i++) {
      const base = rows[i]! * dimensions;
      const { row: c, similarity } = nearestRow(centroids, count, matrix, base, dimensions);
      fit[i] = similarity;
      sizes[c]!++;
      const offset = c * dimensions;
      for (let j = 0; j < dimensions; j++) sums[offset + j]! += matrix[base + j]!;
    }
    reseedEmpty(sizes, fit, rows, matrix, sums, dimensions);
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

/** Gives each empty cluster the worst-fitting sample point (a different one each), as its sum. */
function reseedEmpty(sizes: Int32Array, fit: Float64Array, rows: ArrayLike<number>, matrix: Float32Array, sums: Float64Array, dimensions: number): void {
  const empty: number[] = [];
  for (let c = 0; c < sizes.length; c++) if (sizes[c] === 0) empty.push(c);
  if (empty.length === 0) return;
  const worst = Array.from({ length: fit.length }, (_, i) => i)
    .sort((a, b) => fit[a]! - fit[b]! || a - b)
    .slice(0, empty.length);
  empty.forEach((c, i) => {
    const point = worst[i];
    if (point === undefined) return;
    const base = rows[point]! * dimensions;
    for (let j = 0; j < dimensions; j++) sums[c * dimensions + j] = matrix[base + j]!;
  });
}

/** Rows spread evenly over `rows` (all of them when there are no more than `limit`). */
export function evenSample(rows: ArrayLike<number>, limit: number): Int32Array {
  const n = Math.min(rows.length, limit);
  const sample = new Int32Array(n);
  for (let i = 0; i < n; i++) sample[i] = rows[Math.floor((i * rows.length) / n)]!;
  return sample;
}
