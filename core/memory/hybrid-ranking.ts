import type { LexicalScores } from './bm25.ts';
import type { MemorySpace } from './space.ts';
import { TopK } from './top-k.ts';

/**
 * Hybrid ranking. Each candidate gets three components in [0, 1]:
 *
 *   semantic = max(0, cos(q, d)) / max over candidates of max(0, cos)
 *   lexical  = BM25(q, d) / max over candidates of BM25
 *   graph    = max over seeds s linked to d within `expand` hops of  base(s) / base(best) · ½^(hops−1)
 *
 * where base = w_s·semantic + w_l·lexical, and the seeds are the 10 best candidates by base.
 * The score is  w_s·semantic + w_l·lexical + w_g·graph.
 *
 * Candidates are the 100 best by BM25 and the 100 best by cosine, plus every item the graph
 * reaches from a seed (so a follow-up note that shares no words with the query can still be
 * found through the report it links to). Dividing by the best candidate puts the two text scores
 * on one scale whatever the query's length or the corpus's vocabulary. The weights were tuned
 * on the development split of the relevance set (bench/relevance/, docs/memory.md).
 */
export interface Weights {
  semantic: number;
  lexical: number;
  graph: number;
}

export const DEFAULT_WEIGHTS: Weights = { semantic: 0.3, lexical: 0.4, graph: 0.3 };

const FIRST_STAGE = 100;
const SEEDS = 10;
const HOP_DECAY = 0.5;

export interface Components {
  semantic: number;
  lexical: number;
  graph: number;
}

export interface Ranked {
  doc: number;
  score: number;
  components: Components;
  /** The unnormalised signals: cosine similarity and BM25 (null where the item has none). */
  raw: { cosine: number | null; bm25: number | null };
  /**
   * How the graph reached this item: `from` is the matched item the path started at; `relation`
   * and `direction` describe the path's last edge, `out` when this item links to the step
   * before it, `in` when that step links to this item.
   */
  via: { from: string; relation: string; direction: 'out' | 'in'; hops: number } | null;
}

export interface RankRequest {
  space: MemorySpace;
  revision: number;
  accept(doc: number): boolean;
  /** BM25 of every accepted match; null when the lexical weight is 0. */
  lexical: LexicalScores | null;
  /** The query's unit vector; null when the semantic weight is 0. */
  vector: Float32Array | null;
  weights: Weights;
  graph: { expand: number; relations: ReadonlySet<string> | null };
  topK: number;
}

export function rankHybrid(request: RankRequest): Ranked[] {
  const { space, accept, lexical, vector, weights } = request;
  const candidates = new Set<number>();
  if (lexical) for (const { doc } of lexical.top(FIRST_STAGE)) candidates.add(doc);
  if (vector) for (const { doc } of space.vectors.search(vector, FIRST_STAGE, accept)) candidates.add(doc);

  const cosine = (doc: number) => (vector ? space.vectors.similarity(doc, vector) : null);
  const bm25 = (doc: number) => lexical?.get(doc) ?? null;
  let maxSemantic = 0;
  let maxLexical = 0;
  for (const doc of candidates) {
    maxSemantic = Math.max(maxSemantic, cosine(doc) ?? 0);
    maxLexical = Math.max(maxLexical, bm25(doc) ?? 0);
  }
  const base = (c: Components) => weights.semantic * c.semantic + weights.lexical * c.lexical;
  // Items the graph adds may score above the best first-stage candidate: cap at 1.
  const entry = (doc: number): Ranked => {
    const raw = { cosine: cosine(doc), bm25: bm25(doc) };
    const c: Components = {
      semantic: maxSemantic > 0 ? Math.min(1, Math.max(0, raw.cosine ?? 0) / maxSemantic) : 0,
      lexical: maxLexical > 0 ? Math.min(1, (raw.bm25 ?? 0) / maxLexical) : 0,
      graph: 0,
    };
    return { doc, score: base(c), components: c, raw, via: null };
  };

  const scored = new Map<number, Ranked>();
  for (const doc of candidates) scored.set(doc, entry(doc));
  if (request.graph.expand > 0 && weights.graph > 0) spreadThroughGraph(request, scored, entry);

  const top = new TopK(request.topK);
  for (const ranked of scored.values()) {
    ranked.score = base(ranked.components) + weights.graph * ranked.components.graph;
    top.offer(ranked.doc, ranked.score);
  }
  return top.sorted().map(({ doc }) => scored.get(doc)!);
}

/** Gives items near the best candidates their graph component, adding those not yet candidates. */
function spreadThroughGraph(
  request: RankRequest,
  scored: Map<number, Ranked>,
  entry: (doc: number) => Ranked,
): void {
  const { space, revision, accept } = request;
  const seeds = new TopK(SEEDS);
  for (const ranked of scored.values()) if (ranked.score > 0) seeds.offer(ranked.doc, ranked.score);
  const ordered = seeds.sorted();
  const best = ordered[0]?.score ?? 0;
  if (best === 0) return;
  for (const seed of ordered) {
    const seedId = space.doc(seed.doc).id;
    let frontier = [seed.doc];
    const seen = new Set(frontier);
    for (let hops = 1; hops <= request.graph.expand && frontier.length > 0; hops++) {
      const strength = (seed.score / best) * HOP_DECAY ** (hops - 1);
      const next: number[] = [];
      for (const doc of frontier) {
        for (const edge of space.neighbours(space.doc(doc).id, revision, request.graph.relations)) {
          if (seen.has(edge.doc) || !accept(edge.doc)) continue;
          seen.add(edge.doc);
          next.push(edge.doc);
          let ranked = scored.get(edge.doc);
          if (!ranked) scored.set(edge.doc, (ranked = entry(edge.doc)));
          if (strength > ranked.components.graph) {
            ranked.components.graph = strength;
            // Told from the result's side: `out` when the result links to the step before it.
            ranked.via = { from: seedId, relation: edge.link.relation, direction: edge.direction === 'in' ? 'out' : 'in', hops };
          }
        }
      }
      frontier = next;
    }
  }
}
