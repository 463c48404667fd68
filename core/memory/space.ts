import { Bm25Index } from './bm25.ts';
import { AppendList } from './append-list.ts';
import type { MemoryItem, MemoryLink } from './item.ts';
import { ShardedMap } from './sharded-map.ts';
import { STOP_WORDS, tokenize } from './tokenize.ts';
import { VECTOR_INDEX_DEFAULTS, VectorIndex, type VectorIndexOptions } from './vector-index.ts';

/**
 * One environment's memory as the query side sees it, in process memory: which versions exist
 * and when each was superseded, the lexical and vector indexes, and the link graph. Every
 * version is a document numbered by its revision (document d is revision d + 1), so "memory as
 * of revision R" is a filter, not a copy.
 *
 * It is rebuilt from LMDB at start (core/memory/memory.ts) and grows as versions commit, in
 * structures that grow a block or a shard at a time (core/memory/append-list.ts,
 * core/memory/sharded-map.ts, core/memory/vector-rows.ts): every decision recorded adds a
 * document, and growing by copying everything at once stalled requests for up to 200 ms.
 */
export class MemorySpace {
  readonly lexical = new Bm25Index();
  readonly vectors: VectorIndex;
  /** Per document (= revision - 1). */
  private readonly docs = new AppendList<Pick<MemoryItem, 'id' | 'version' | 'namespace' | 'tombstone' | 'links' | 'attributes' | 'createdBy'>>();
  private readonly times = new AppendList<number>();
  /** Revision at which each document was superseded by the item's next version (Infinity while latest). */
  private readonly supersededAt = new AppendList<number>();
  /** Item id → its documents, oldest version first. */
  private readonly byId = new ShardedMap<number[]>();
  /** `namespace\0key` → item id. */
  private readonly byKey = new ShardedMap<string>();
  /**
   * Item id → the documents that link to it, in order: a list rather than a set of source ids,
   * because an item every decision links to (its policy, say) has one per decision, and a set
   * that size stalled the turn it grew in (core/memory/sharded-map.ts has the figures).
   */
  private readonly incoming = new ShardedMap<AppendList<number>>();
  /** Namespace → ids of the items ever written there, oldest first. */
  private readonly namespaceItems = new Map<string, AppendList<string>>();
  /** Ids of every item ever written, oldest first. */
  private readonly itemOrder = new AppendList<string>();

  constructor(dimensions: number, vectorOptions: VectorIndexOptions = VECTOR_INDEX_DEFAULTS) {
    this.vectors = new VectorIndex(dimensions, vectorOptions);
  }

  /** The newest revision written. */
  get revision(): number {
    return this.docs.length;
  }

  /** The time of the newest revision, in ms; new revisions never go back in time. */
  get lastTime(): number {
    return this.times.last() ?? 0;
  }

  /**
   * Adds `item` as the next revision (`revision + 1`, which is `item.revision`: versions are
   * added as they commit, in the order their revisions were given, on every instance).
   */
  add(item: MemoryItem, vector: Float32Array | null): number {
    const doc = this.docs.length;
    const links = item.links.map((link) => this.linkFrom(doc, link));
    this.docs.push({ id: item.id, version: item.version, namespace: item.namespace, tombstone: item.tombstone, links, attributes: item.attributes, createdBy: item.createdBy });
    this.times.push(Math.max(Date.parse(item.createdAt), this.lastTime));
    this.supersededAt.push(Infinity);
    // New arrays and lists are made holding their first entry: begun empty, an array reserves
    // 17 slots at its first push, and most items have one version and one item linking to them.
    const versions = this.byId.get(item.id);
    if (versions) {
      this.supersededAt.set(versions.at(-1)!, doc + 1);
      versions.push(doc);
    } else {
      this.byId.set(item.id, [doc]);
      this.byKey.set(`${item.namespace}\0${item.key}`, item.id);
      const ids = this.namespaceItems.get(item.namespace);
      if (ids) ids.push(item.id);
      else this.namespaceItems.set(item.namespace, new AppendList(item.id));
      this.itemOrder.push(item.id);
    }
    if (!item.tombstone) this.lexical.add(doc, lexicalTokens(item.text));
    if (vector) this.vectors.set(doc, vector);
    return doc;
  }

  /**
   * Files `doc` among the documents linking to `link.to`, and gives back the link it keeps: the
   * equal link object (same target, relation and version) of the last document linking there,
   * if it holds one. Every decision links to its policy, its inputs and its context values: an
   * object of its own for each of those came to about 250 bytes of heap per decision recorded
   * (docs/memory.md).
   */
  private linkFrom(doc: number, link: MemoryLink): MemoryLink {
    const sources = this.incoming.get(link.to);
    if (!sources) {
      this.incoming.set(link.to, new AppendList(doc));
      return link;
    }
    const last = sources.last()!;
    // A second link of this document to the same target: the document is filed already.
    if (last === doc) return link;
    sources.push(doc);
    return this.docs.get(last).links.find((held) => held.to === link.to && held.relation === link.relation && held.version === link.version) ?? link;
  }

  /** Whether document `doc` is the item's current version, not deleted, as of `revision`. */
  live(doc: number, revision: number): boolean {
    return doc < revision && this.supersededAt.get(doc) >= revision + 1 && !this.docs.get(doc).tombstone;
  }

  doc(doc: number) {
    return this.docs.get(doc);
  }

  /** When document `doc` was written, in ms. */
  time(doc: number): number {
    return this.times.get(doc);
  }

  /** The document holding item `id` as of `revision` (a tombstone included), if it existed then. */
  docAt(id: string, revision: number): number | undefined {
    const versions = this.byId.get(id);
    if (!versions) return undefined;
    for (let i = versions.length - 1; i >= 0; i--) if (versions[i]! < revision) return versions[i];
    return undefined;
  }

  /** The document holding version `version` of item `id`, if it was added. */
  docOf(id: string, version: number): number | undefined {
    return this.byId.get(id)?.find((doc) => this.docs.get(doc).version === version);
  }

  /** Every version's document of item `id` up to `revision`, oldest first. */
  history(id: string, revision: number): number[] {
    return (this.byId.get(id) ?? []).filter((doc) => doc < revision);
  }

  latestVersion(id: string): number | undefined {
    return this.latest(id)?.version;
  }

  /** The newest version of item `id`, a tombstone included. */
  latest(id: string) {
    const last = this.byId.get(id)?.at(-1);
    return last === undefined ? undefined : this.docs.get(last);
  }

  idForKey(namespace: string, key: string): string | undefined {
    return this.byKey.get(`${namespace}\0${key}`);
  }

  hasNamespace(namespace: string): boolean {
    return this.namespaceItems.has(namespace);
  }

  namespaces(): string[] {
    return [...this.namespaceItems.keys()].sort();
  }

  /** Items in `namespace` live as of `revision`, in the order they were first written. */
  liveIn(namespace: string, revision: number): number[] {
    return this.liveItems(revision, { namespace, after: -1, limit: Infinity, accept: () => true }).map(({ doc }) => doc);
  }

  /**
   * Items live as of `revision` (in `namespace`, if given) whose live document `accept` takes, in
   * the order they were first written: at most `limit`, starting after the item first written
   * at document `after`. Each comes with that first document, its `position`, which never
   * changes, so a listing resumed from it neither repeats nor skips an item.
   */
  liveItems(
    revision: number,
    options: { namespace?: string; after: number; limit: number; accept(doc: number): boolean },
  ): Array<{ doc: number; position: number }> {
    const ids = options.namespace === undefined ? this.itemOrder : (this.namespaceItems.get(options.namespace) ?? new AppendList<string>());
    const position = (id: string) => this.byId.get(id)![0]!;
    let low = 0;
    let high = ids.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (position(ids.get(mid)) <= options.after) low = mid + 1;
      else high = mid;
    }
    const found: Array<{ doc: number; position: number }> = [];
    for (let i = low; i < ids.length && found.length < options.limit; i++) {
      const doc = this.docAt(ids.get(i), revision);
      if (doc !== undefined && this.live(doc, revision) && options.accept(doc)) found.push({ doc, position: position(ids.get(i)) });
    }
    return found;
  }

  /**
   * The live neighbours of item `id` as of `revision`: where its live version links to, and the
   * live items whose live version links to it. `relations` (if given) limits the edges followed.
   */
  neighbours(id: string, revision: number, relations: ReadonlySet<string> | null): Array<{ doc: number; link: MemoryLink; direction: 'out' | 'in' }> {
    const found: Array<{ doc: number; link: MemoryLink; direction: 'out' | 'in' }> = [];
    const self = this.docAt(id, revision);
    if (self !== undefined && this.live(self, revision)) {
      for (const link of this.docs.get(self).links) {
        if (relations && !relations.has(link.relation)) continue;
        const target = this.docAt(link.to, revision);
        if (target !== undefined && this.live(target, revision)) found.push({ doc: target, link, direction: 'out' });
      }
    }
    const seen = new Set<string>();
    for (const linking of this.incoming.get(id) ?? []) {
      if (linking >= revision) break;
      const source = this.docs.get(linking).id;
      if (seen.has(source)) continue;
      seen.add(source);
      const doc = this.docAt(source, revision);
      if (doc === undefined || !this.live(doc, revision)) continue;
      for (const link of this.docs.get(doc).links) {
        if (link.to === id && (!relations || relations.has(link.relation))) found.push({ doc, link, direction: 'in' });
      }
    }
    return found;
  }

  /** The newest revision written at or before `timeMs` (0 if none). */
  revisionAt(timeMs: number): number {
    let low = 0;
    let high = this.times.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (this.times.get(mid) <= timeMs) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}

/** The tokens BM25 indexes and queries with. */
export function lexicalTokens(text: string): string[] {
  return tokenize(text).filter((token) => !STOP_WORDS.has(token));
}
