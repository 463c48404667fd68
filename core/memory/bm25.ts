import { AppendList } from './append-list.ts';
import { TopK, type Scored } from './top-k.ts';

/**
 * Okapi BM25 over an incrementally built inverted index. Documents are numbered by the caller
 * (core/memory/space.ts numbers every held version); a document is never removed: which versions
 * a query may see is decided by the `accept` filter, and retention copies the index without the
 * documents it drops (`copyInto`).
 * Collection statistics (document count, average length, document frequencies) therefore count
 * every version, a small bias towards often-rewritten items that keeps writes O(tokens).
 * Posting lists and lengths grow a block at a time (core/memory/append-list.ts): a word every
 * decision shares has a posting per decision.
 */
export const BM25 = { k1: 1.2, b: 0.75 };

/** Postings `copyInto` copies between two pauses (about a millisecond). */
const COPY_STEP = 8_192;

interface Postings {
  docs: AppendList<number>;
  frequencies: AppendList<number>;
}

export class Bm25Index {
  private readonly postings = new Map<string, Postings>();
  /** Per document (0 for the numbers never added: deletions). */
  private readonly lengths = new AppendList<number>();
  private totalLength = 0;
  private documents = 0;

  /** Indexes document `doc` (numbers must be new) with its tokens. */
  add(doc: number, tokens: readonly string[]): void {
    const counts = new Map<string, number>();
    for (const token of tokens) counts.set(token, (counts.get(token) ?? 0) + 1);
    for (const [term, count] of counts) {
      const list = this.postings.get(term);
      if (!list) {
        this.postings.set(term, { docs: new AppendList(doc), frequencies: new AppendList(count) });
        continue;
      }
      list.docs.push(doc);
      list.frequencies.push(count);
    }
    while (this.lengths.length < doc) this.lengths.push(0);
    this.lengths.push(tokens.length);
    this.totalLength += tokens.length;
    this.documents++;
  }

  /**
   * Fills `into` (empty) with this index's documents renumbered by `moved` (-1: left out), a
   * step at a time, for memory's compaction (core/memory/space.ts). `indexed(doc)` (of the new
   * numbering) tells a document that was added from one that only holds its number (a deletion).
   * Renumbering keeps the order of the documents kept, so posting lists stay sorted.
   */
  *copyInto(into: Bm25Index, moved: Int32Array, indexed: (doc: number) => boolean): Generator<void, void> {
    for (let doc = 0; doc < moved.length; doc++) {
      if (doc % COPY_STEP === COPY_STEP - 1) yield;
      const to = moved[doc]!;
      if (to < 0) continue;
      while (into.lengths.length < to) into.lengths.push(0);
      const length = doc < this.lengths.length ? this.lengths.get(doc) : 0;
      into.lengths.push(length);
      if (indexed(to)) {
        into.totalLength += length;
        into.documents++;
      }
    }
    let work = 0;
    for (const [term, list] of this.postings) {
      let copy: Postings | null = null;
      const frequencyChunks = list.frequencies.chunks();
      for (const [c, docs] of list.docs.chunks().entries()) {
        const frequencies = frequencyChunks[c]!;
        for (let i = 0; i < docs.length; i++) {
          const doc = docs[i]!;
          if (doc >= moved.length) break;
          const to = moved[doc]!;
          if (to < 0) continue;
          if (copy) {
            copy.docs.push(to);
            copy.frequencies.push(frequencies[i]!);
          } else {
            copy = { docs: new AppendList(to), frequencies: new AppendList(frequencies[i]!) };
            into.postings.set(term, copy);
          }
        }
        work += docs.length;
        if (work >= COPY_STEP) {
          work = 0;
          yield;
        }
      }
    }
  }

  /**
   * BM25 of every accepted document matching at least one query term. Scores accumulate in a
   * dense array indexed by document, and `accept` is asked once per document: a query whose
   * words are common touches a third of a 100,000-item memory, where a Map per query cost
   * up to 17 ms at p99 (the memory bench) and this costs ~1 ms.
   */
  scores(queryTokens: readonly string[], accept: (doc: number) => boolean): LexicalScores {
    const scores = new Float64Array(this.lengths.length);
    const matched: number[] = [];
    if (this.documents === 0) return new LexicalScores(scores, matched);
    const averageLength = this.totalLength / this.documents;
    const { k1, b } = BM25;
    for (const term of new Set(queryTokens)) {
      const list = this.postings.get(term);
      if (!list) continue;
      const df = list.docs.length;
      const idf = Math.log(1 + (this.documents - df + 0.5) / (df + 0.5));
      const frequencyChunks = list.frequencies.chunks();
      for (const [c, docs] of list.docs.chunks().entries()) {
        const frequencies = frequencyChunks[c]!;
        for (let i = 0; i < docs.length; i++) {
          const doc = docs[i]!;
          // A term's share is always above 0, so 0 means "not seen yet" and -1 "not accepted".
          const current = scores[doc]!;
          if (current < 0) continue;
          if (current === 0) {
            if (!accept(doc)) {
              scores[doc] = REJECTED;
              continue;
            }
            matched.push(doc);
          }
          const tf = frequencies[i]!;
          scores[doc] = current + (idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * this.lengths.get(doc)) / averageLength));
        }
      }
    }
    return new LexicalScores(scores, matched);
  }
}

const REJECTED = -1;

/** One query's BM25 scores over the accepted documents it matched. */
export class LexicalScores {
  constructor(
    private readonly scores: Float64Array,
    /** The accepted documents matching at least one term, in the order first met. */
    readonly matched: readonly number[],
  ) {}

  /** The BM25 of `doc`, or null when it matched no term (or was not accepted). */
  get(doc: number): number | null {
    const score = this.scores[doc];
    return score !== undefined && score > 0 ? score : null;
  }

  /** The `k` best, best first. */
  top(k: number): Scored[] {
    const top = new TopK(k);
    for (const doc of this.matched) {
      const score = this.scores[doc]!;
      if (score > top.floor) top.offer(doc, score);
    }
    return top.sorted();
  }
}
