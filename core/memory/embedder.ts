/**
 * What memory needs from an embedding model: unit-length vectors of a fixed dimension, so that
 * similarity is a dot product. Implementations: the offline word-vector model
 * (core/memory/word-vectors.ts, the default) and an HTTP service (core/memory/http-embedder.ts).
 */
export interface Embedder {
  /** Names the model; stored vectors made by another model are re-embedded at start. */
  readonly id: string;
  readonly dimensions: number;
  /** One unit vector per text, in order; a text with nothing to embed gets the zero vector. */
  embed(texts: readonly string[]): Promise<Float32Array[]>;
  /**
   * A model that runs in this process answers synchronously too. Memory then stores none of its
   * vectors and works each out again where it needs it (as a version is indexed, at start): for
   * the word-vector model that costs 2–4 µs, what decoding a stored vector costs, and saves every
   * version a vector write and the transaction that carried it.
   */
  embedNow?(text: string): Float32Array;
  /**
   * Such a model can load in the background, rather than on the first text: starts it (once)
   * and resolves when it is loaded, or could not be (the first text then loads it and says why).
   */
  warm?(): Promise<void>;
}

/** Scales `vector` to unit length in place; the zero vector stays zero. */
export function normalise(vector: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
  if (sum === 0) return vector;
  const scale = 1 / Math.sqrt(sum);
  for (let i = 0; i < vector.length; i++) vector[i]! *= scale;
  return vector;
}

export function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}
