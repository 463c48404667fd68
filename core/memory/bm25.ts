/**
 * Okapi BM25 over an incrementally built inverted index. Documents are numbered by the caller
 * (core/memory/space.ts numbers every stored version); a document is never removed, because
 * versions are never removed: which versions a query may see is decided by the `accept` filter.
 * Collection statistics (document count, average length, document frequencies) therefore count
 * every version, a small bias towards often-rewritten items that keeps writes O(tokens).
 */
export const BM25 = { k1: 1.2, b: 0.75 };

interface Postings {
  docs: number[];
  frequencies: number[];
}

export class Bm25Index {
  private readonly postings = new Map<string, Postings>();
  private readonly lengths: number[] = [];
  private totalLength = 0;
  private documents = 0;

  /** Indexes document `doc` (numbers must be new) with its tokens. */
  add(doc: number, tokens: readonly string[]): void {
    const counts = new Map<string, number>();
    for (const token of tokens) counts.set(token, (counts.get(token) ?? 0) + 1);
    for (const [term, count] of counts) {
      let list = this.postings.get(term);
      if (!list) this.postings.set(term, (list = { docs: [], frequencies: [] }));
      list.docs.push(doc);
      list.frequencies.push(count);
    }
    this.lengths[doc] = tokens.length;
    this.totalLength += tokens.length;
    this.documents++;
  }

  /** BM25 of every accepted document matching at least one query term. */
  scores(queryTokens: readonly string[], accept: (doc: number) => boolean): Map<number, number> {
    const scores = new Map<number, number>();
    if (this.documents === 0) return scores;
    const averageLength = this.totalLength / this.documents;
    const { k1, b } = BM25;
    for (const term of new Set(queryTokens)) {
      const list = this.postings.get(term);
      if (!list) continue;
      const df = list.docs.length;
      const idf = Math.log(1 + (this.documents - df + 0.5) / (df + 0.5));
      for (let i = 0; i < df; i++) {
        const doc = list.docs[i]!;
        if (!accept(doc)) continue;
        const tf = list.frequencies[i]!;
        const norm = tf + k1 * (1 - b + (b * this.lengths[doc]!) / averageLength);
        scores.set(doc, (scores.get(doc) ?? 0) + (idf * tf * (k1 + 1)) / norm);
      }
    }
    return scores;
  }
}
