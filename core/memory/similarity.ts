import type { TopK } from './top-k.ts';
import type { VectorRows } from './vector-rows.ts';

/**
 * The arithmetic every vector search, k-means step and cell assignment shares. Vectors are unit
 * length, so a dot product is their cosine.
 */

/**
 * `matrix[base..base+n) · query`, four independent sums at a time so the multiplies overlap:
 * a 100,000 × 100 scan took 32 ms instead of 40 ms with one running sum on the bench machine.
 */
export function dot(matrix: Float32Array, base: number, query: Float32Array, n: number): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let i = 0;
  for (; i + 3 < n; i += 4) {
    s0 += matrix[base + i]! * query[i]!;
    s1 += matrix[base + i + 1]! * query[i + 1]!;
    s2 += matrix[base + i + 2]! * query[i + 2]!;
    s3 += matrix[base + i + 3]! * query[i + 3]!;
  }
  for (; i < n; i++) s0 += matrix[base + i]! * query[i]!;
  return s0 + s1 + s2 + s3;
}

/** Which of the `count` rows of `centroids` is most similar to `matrix[base..base+n)`, and how similar. */
export function nearestRow(centroids: Float32Array, count: number, matrix: Float32Array, base: number, n: number): { row: number; similarity: number } {
  const vector = matrix.subarray(base, base + n);
  let row = 0;
  let similarity = -Infinity;
  for (let c = 0; c < count; c++) {
    const s = dot(centroids, c * n, vector, n);
    if (s > similarity) {
      similarity = s;
      row = c;
    }
  }
  return { row, similarity };
}

/** Which of the `count` rows of `centroids` is most similar to row `row` of `vectors`, and how similar. */
export function nearestTo(centroids: Float32Array, count: number, vectors: VectorRows, row: number): { row: number; similarity: number } {
  return nearestRow(centroids, count, vectors.block(row), vectors.base(row), vectors.dimensions);
}

/**
 * Offers document `doc` (stored at `row`) to `top`. Scoring is cheaper than `accept`
 * (liveness, filters), so only documents that would enter the top k are asked about.
 */
export function offerRow(top: TopK, vectors: VectorRows, row: number, doc: number, query: Float32Array, accept: (doc: number) => boolean): void {
  const similarity = dot(vectors.block(row), vectors.base(row), query, vectors.dimensions);
  if (similarity > top.floor && accept(doc)) top.offer(doc, similarity);
}
