import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_WEIGHTS, type Weights } from '../../core/memory/hybrid-ranking.ts';
import { Memory } from '../../core/memory/memory.ts';
import { WordVectorEmbedder, type WordWeighting } from '../../core/memory/word-vectors.ts';
import { Store } from '../../core/store.ts';
import { generateRelevanceSet, type RelevanceQuery, type RelevanceSet } from './generate.ts';

/**
 * Scores retrieval on the relevance set (bench/relevance/generate.ts): recall@10 and nDCG@10 for
 * BM25 alone, embeddings alone and the hybrid, on the test split.
 *
 *   node --import tsx bench/relevance/evaluate.ts           the table
 *   node --import tsx bench/relevance/evaluate.ts --tune    also the weight grid, on the dev split
 *   node --import tsx bench/relevance/evaluate.ts --weighting uniform   plain mean word vectors
 */
export const MODES: Record<'lexical' | 'semantic' | 'hybrid', { weights: Weights; expand: number }> = {
  lexical: { weights: { semantic: 0, lexical: 1, graph: 0 }, expand: 0 },
  semantic: { weights: { semantic: 1, lexical: 0, graph: 0 }, expand: 0 },
  hybrid: { weights: DEFAULT_WEIGHTS, expand: 1 },
};

export interface Quality {
  recall10: number;
  ndcg10: number;
}

/** A memory holding the relevance corpus, in a temporary data directory removed by `close`. */
export async function relevanceMemory(set: RelevanceSet, embedder = new WordVectorEmbedder()): Promise<{ memory: Memory; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-relevance-'));
  const store = Store.open({ dataDir: dir });
  const memory = new Memory(store, embedder);
  for (let start = 0; start < set.items.length; start += 500) {
    const batch = set.items.slice(start, start + 500);
    const vectors = await embedder.embed(batch.map((item) => item.text));
    await store.commit(() => batch.forEach((item, i) => memory.write('sandbox', 'key_bench', item, vectors[i]!)));
  }
  return {
    memory,
    close: async () => {
      await memory.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Mean recall@10 and nDCG@10 (graded gains 2^grade − 1) over `queries`. */
export async function evaluate(memory: Memory, queries: readonly RelevanceQuery[], weights: Weights, expand: number): Promise<Quality> {
  let recall = 0;
  let ndcg = 0;
  for (const query of queries) {
    const answer = await memory.query('sandbox', { query: query.query, topK: 10, weights, graph: { expand } });
    const labels = answer.results.map((hit) => `${hit.item.namespace}:${hit.item.key}`);
    const grades = Object.values(query.relevant).sort((a, b) => b - a);
    recall += labels.filter((label) => query.relevant[label]).length / grades.length;
    const dcg = labels.reduce((sum, label, rank) => sum + (2 ** (query.relevant[label] ?? 0) - 1) / Math.log2(rank + 2), 0);
    const ideal = grades.slice(0, 10).reduce((sum, grade, rank) => sum + (2 ** grade - 1) / Math.log2(rank + 2), 0);
    ndcg += dcg / ideal;
  }
  return { recall10: recall / queries.length, ndcg10: ndcg / queries.length };
}

/** The three modes on one split. */
export async function qualityTable(memory: Memory, queries: readonly RelevanceQuery[]): Promise<Record<keyof typeof MODES, Quality>> {
  const table = {} as Record<keyof typeof MODES, Quality>;
  for (const [mode, { weights, expand }] of Object.entries(MODES) as Array<[keyof typeof MODES, (typeof MODES)[keyof typeof MODES]]>) {
    table[mode] = await evaluate(memory, queries, weights, expand);
  }
  return table;
}

async function main(args: string[]): Promise<void> {
  const weighting = (args.includes('--weighting') ? args[args.indexOf('--weighting') + 1] : 'frequency') as WordWeighting;
  const set = generateRelevanceSet();
  const started = performance.now();
  const { memory, close } = await relevanceMemory(set, new WordVectorEmbedder(undefined, weighting));
  console.log(`${set.items.length} items indexed in ${((performance.now() - started) / 1000).toFixed(1)} s (word weighting: ${weighting})`);
  const dev = set.queries.filter((q) => q.split === 'dev');
  const test = set.queries.filter((q) => q.split === 'test');
  if (args.includes('--tune')) {
    const grid: Array<{ weights: Weights; quality: Quality }> = [];
    for (const graph of [0, 0.1, 0.2, 0.3, 0.4, 0.5]) {
      for (let semantic = 0.1; semantic < 1 - graph - 0.05; semantic += 0.1) {
        const weights = { semantic: round(semantic), lexical: round(1 - graph - semantic), graph };
        grid.push({ weights, quality: await evaluate(memory, dev, weights, 1) });
      }
    }
    grid.sort((a, b) => b.quality.ndcg10 - a.quality.ndcg10);
    console.log('dev split, best weights by nDCG@10:');
    for (const { weights, quality } of grid.slice(0, 8)) console.log(`  ${JSON.stringify(weights)}  nDCG@10 ${quality.ndcg10.toFixed(3)}  recall@10 ${quality.recall10.toFixed(3)}`);
  }
  const table = await qualityTable(memory, test);
  console.log(`\ntest split: ${test.length} queries\n\n| retrieval | recall@10 | nDCG@10 |\n|---|---|---|`);
  for (const [mode, quality] of Object.entries(table)) console.log(`| ${mode} | ${quality.recall10.toFixed(3)} | ${quality.ndcg10.toFixed(3)} |`);
  await close();
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main(process.argv.slice(2));
