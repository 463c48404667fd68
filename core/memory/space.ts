import { Bm25Index } from './bm25.ts';
import { AppendList } from './append-list.ts';
import type { MemoryItem, MemoryLink } from './item.ts';
import { ShardedMap } from './sharded-map.ts';
import { STOP_WORDS, tokenize } from './tokenize.ts';
import { VECTOR_INDEX_DEFAULTS, VectorIndex, type VectorIndexOptions } from './vector-index.ts';

/** The namespace retention evicts from: it holds one item per decision recorded. */
export const DECISIONS_NAMESPACE = 'decisions';

/**
 * What the query side holds of one version; the rest (its text) stays in LMDB. Its key is held
 * for retention, which indexes the keys of the items it drops (reading each back from LMDB cost
 * more than 5 µs per decision recorded).
 */
export type HeldVersion = Pick<MemoryItem, 'id' | 'key' | 'version' | 'namespace' | 'tombstone' | 'links' | 'attributes' | 'createdBy'>;

/** Items in the order first written, each with the revision of its first version (its listing position). */
interface ItemOrder {
  ids: AppendList<string>;
  born: AppendList<number>;
}

/** Versions added to a space while it is being compacted: the compacted space takes them on at its end. */
interface CompactionLog {
  arrivals: MemoryItem[];
  /** Documents (of the space being compacted) whose vector was set meanwhile. */
  vectors: number[];
}

/**
 * Documents a compaction copies between two pauses: about a millisecond of work on the bench
 * machine, so a slice of a few milliseconds (core/memory/retention.ts) holds a few of them.
 */
const COPY_STEP = 1024;

/**
 * One environment's memory as the query side sees it, in process memory: which versions exist
 * and when each was superseded, the lexical and vector indexes, and the link graph. Each held
 * version is a document, numbered densely in revision order; a column gives each document's
 * revision, so "memory as of revision R" is a filter, not a copy.
 *
 * It is rebuilt from LMDB at start (core/memory/memory.ts) and grows as versions commit, in
 * structures that grow a block or a shard at a time (core/memory/append-list.ts,
 * core/memory/sharded-map.ts, core/memory/vector-rows.ts): every decision recorded adds a
 * document, and growing by copying everything at once stalled requests for up to 200 ms.
 *
 * Retention keeps it bounded: `compaction` makes a space holding only the newest decisions (and
 * every other item's versions still visible from its horizon on), which replaces this one.
 */
export class MemorySpace {
  readonly lexical = new Bm25Index();
  readonly vectors: VectorIndex;
  private readonly docs = new AppendList<HeldVersion>();
  private readonly times = new AppendList<number>();
  private readonly revisions = new AppendList<number>();
  /** Revision of each document's next version (Infinity while latest). */
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
  private readonly namespaceItems = new Map<string, ItemOrder>();
  private readonly itemOrder: ItemOrder = { ids: new AppendList(), born: new AppendList() };
  /** The newest revision written, held or not. */
  private written = 0;
  /** Items of the decisions namespace held. */
  private decisionItems = 0;
  /**
   * The oldest revision memory is still whole as of: compaction dropped the versions only visible
   * before it (0 while nothing was dropped).
   */
  horizon = 0;
  private compacting: CompactionLog | null = null;

  constructor(
    readonly dimensions: number,
    private readonly vectorOptions: VectorIndexOptions = VECTOR_INDEX_DEFAULTS,
  ) {
    this.vectors = new VectorIndex(dimensions, vectorOptions);
  }

  /** The newest revision written. */
  get revision(): number {
    return this.written;
  }

  /** Versions held. */
  get size(): number {
    return this.docs.length;
  }

  /** Items of the decisions namespace held: what retention bounds. */
  get decisions(): number {
    return this.decisionItems;
  }

  /** The time of the newest version held, in ms; new revisions never go back in time. */
  get lastTime(): number {
    return this.times.last() ?? 0;
  }

  /**
   * Adds `item` at its revision: versions are added as they commit, in the order their revisions
   * were given, on every instance (and at start in that order, less what retention leaves out).
   * Revisions only go up: one numbered out of order by an earlier release's cluster instance is
   * held at the next revision instead.
   */
  add(item: MemoryItem, vector: Float32Array | null): number {
    this.compacting?.arrivals.push(item);
    this.written = Math.max(item.revision, this.written + 1);
    const doc = this.hold(item, this.written, Date.parse(item.createdAt));
    if (this.byId.get(item.id)!.length === 1) {
      this.byKey.set(`${item.namespace}\0${item.key}`, item.id);
      this.listItem(item.id, item.namespace, this.written);
    }
    if (!item.tombstone) this.lexical.add(doc, lexicalTokens(item.text));
    if (vector) this.vectors.set(doc, vector);
    return doc;
  }

  /** Stores (or replaces) the vector of document `doc`. */
  setVector(doc: number, vector: Float32Array): void {
    this.compacting?.vectors.push(doc);
    this.vectors.set(doc, vector);
  }

  /** Appends a version as the next document: its columns, its item's versions and its links. */
  private hold(version: HeldVersion, revision: number, time: number): number {
    const doc = this.docs.length;
    const held = version.links.map((link) => this.linkFrom(doc, link));
    this.docs.push({ id: version.id, key: version.key, version: version.version, namespace: version.namespace, tombstone: version.tombstone, links: held, attributes: version.attributes, createdBy: version.createdBy });
    this.times.push(Math.max(time, this.lastTime));
    this.revisions.push(revision);
    this.supersededAt.push(Infinity);
    // New arrays and lists are made holding their first entry: begun empty, an array reserves
    // 17 slots at its first push, and most items have one version and one item linking to them.
    const versions = this.byId.get(version.id);
    if (versions) {
      this.supersededAt.set(versions.at(-1)!, revision);
      versions.push(doc);
    } else {
      this.byId.set(version.id, [doc]);
      if (version.namespace === DECISIONS_NAMESPACE) this.decisionItems++;
    }
    return doc;
  }

  /** Files item `id` at the end of the order items are listed in, and of its namespace's. */
  private listItem(id: string, namespace: string, born: number): void {
    const order = this.namespaceItems.get(namespace);
    if (order) {
      order.ids.push(id);
      order.born.push(born);
    } else {
      this.namespaceItems.set(namespace, { ids: new AppendList(id), born: new AppendList(born) });
    }
    this.itemOrder.ids.push(id);
    this.itemOrder.born.push(born);
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

  /** The revision document `doc` was written at. */
  revisionOf(doc: number): number {
    return this.revisions.get(doc);
  }

  /** Whether document `doc` is the item's current version, not deleted, as of `revision`. */
  live(doc: number, revision: number): boolean {
    return this.revisions.get(doc) <= revision && this.supersededAt.get(doc) > revision && !this.docs.get(doc).tombstone;
  }

  doc(doc: number): HeldVersion {
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
    for (let i = versions.length - 1; i >= 0; i--) if (this.revisions.get(versions[i]!) <= revision) return versions[i];
    return undefined;
  }

  /** The document holding version `version` of item `id`, if it is held. */
  docOf(id: string, version: number): number | undefined {
    return this.byId.get(id)?.find((doc) => this.docs.get(doc).version === version);
  }

  /** Every held version's document of item `id` up to `revision`, oldest first. */
  history(id: string, revision: number): number[] {
    return (this.byId.get(id) ?? []).filter((doc) => this.revisions.get(doc) <= revision);
  }

  latestVersion(id: string): number | undefined {
    return this.latest(id)?.version;
  }

  /** The newest version of item `id`, a tombstone included. */
  latest(id: string): HeldVersion | undefined {
    const last = this.byId.get(id)?.at(-1);
    return last === undefined ? undefined : this.docs.get(last);
  }

  /** Whether any version of item `id` is held. */
  holds(id: string): boolean {
    return this.byId.has(id);
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
   * at revision `after`. Each comes with that first revision, its `position`, which never
   * changes, so a listing resumed from it neither repeats nor skips an item.
   */
  liveItems(
    revision: number,
    options: { namespace?: string; after: number; limit: number; accept(doc: number): boolean },
  ): Array<{ doc: number; position: number }> {
    const order = options.namespace === undefined ? this.itemOrder : this.namespaceItems.get(options.namespace);
    const found: Array<{ doc: number; position: number }> = [];
    if (!order) return found;
    let low = 0;
    let high = order.ids.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (order.born.get(mid) <= options.after) low = mid + 1;
      else high = mid;
    }
    for (let i = low; i < order.ids.length && found.length < options.limit; i++) {
      const doc = this.docAt(order.ids.get(i), revision);
      if (doc !== undefined && this.live(doc, revision) && options.accept(doc)) found.push({ doc, position: order.born.get(i) });
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
      if (this.revisions.get(linking) > revision) break;
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

  /** The newest revision written at or before `timeMs`, as far as the versions held tell (0 if none). */
  revisionAt(timeMs: number): number {
    let low = 0;
    let high = this.times.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (this.times.get(mid) <= timeMs) low = mid + 1;
      else high = mid;
    }
    return low === 0 ? 0 : this.revisions.get(low - 1);
  }

  /**
   * Makes, in steps, the space that keeps the newest `retain` decision items of this one and
   * everything else still visible from the new horizon on: the revision of the oldest decision
   * version kept. Dropped are the items of older decisions, whole, and every version superseded
   * by then (visible only to an `asOf` before the horizon, which is refused from then on).
   * `evicted` is told of each decision item dropped (the caller keeps where its key leads).
   *
   * This space goes on taking versions while the steps run (the generator yields between about a
   * thousand documents' work); the last step, which must run in the same event-loop turn as the
   * caller swaps the spaces, takes on what arrived meanwhile. Null when nothing is to be dropped.
   */
  *compaction(retain: number, evicted: (version: HeldVersion) => void): Generator<void, MemorySpace | null> {
    const end = this.docs.length;
    const written = this.written;
    const log: CompactionLog = { arrivals: [], vectors: [] };
    this.compacting = log;
    try {
      // The cut: the latest version of the `retain`-th newest decision item.
      let kept = 0;
      let cut = -1;
      for (let doc = end - 1; doc >= 0 && cut < 0; doc--) {
        if (this.docs.get(doc).namespace === DECISIONS_NAMESPACE && this.supersededAt.get(doc) === Infinity && ++kept === retain) cut = doc;
        if (doc % (COPY_STEP * 4) === 0) yield;
      }
      if (cut <= 0) return null;
      // A pause between phases, however small the space: the caller indexes the keys of the items
      // dropped between two steps, before the last.
      yield;
      const next = new MemorySpace(this.dimensions, this.vectorOptions);
      const horizon = Math.max(this.horizon, this.revisions.get(cut));
      next.horizon = horizon;
      next.written = written;
      // The columns. A version kept is the same object (its links are shared already), and the
      // maps are copied after, list by list, rather than looked up per document.
      /** This space's document → the next's, or -1 where dropped. */
      const moved = new Int32Array(end).fill(-1);
      for (let doc = 0; doc < end; doc++) {
        const version = this.docs.get(doc);
        const superseded = this.supersededAt.get(doc);
        if (version.namespace === DECISIONS_NAMESPACE && (superseded === Infinity ? doc : this.byId.get(version.id)!.at(-1)!) < cut) {
          if (superseded === Infinity) evicted(version);
        } else if (superseded > horizon) {
          const to = next.docs.length;
          moved[doc] = to;
          next.docs.push(version);
          next.times.push(this.times.get(doc));
          next.revisions.push(this.revisions.get(doc));
          next.supersededAt.push(superseded);
          next.vectors.copy(this.vectors, doc, to);
        }
        if (doc % COPY_STEP === COPY_STEP - 1) yield;
      }
      yield;
      let visited = 0;
      for (const [id, docs] of this.byId.entries()) {
        const mapped: number[] = [];
        for (const doc of docs) if (doc < end && moved[doc]! >= 0) mapped.push(moved[doc]!);
        if (mapped.length > 0) {
          next.byId.set(id, mapped);
          if (next.docs.get(mapped[0]!).namespace === DECISIONS_NAMESPACE) next.decisionItems++;
        }
        if (++visited % COPY_STEP === 0) yield;
      }
      for (const [key, id] of this.byKey.entries()) {
        if (next.byId.has(id)) next.byKey.set(key, id);
        if (++visited % COPY_STEP === 0) yield;
      }
      // Counted by entry: the item every decision links to (its policy) has one per decision.
      for (const [target, sources] of this.incoming.entries()) {
        let mapped: AppendList<number> | null = null;
        for (const chunk of sources.chunks()) {
          for (let i = 0; i < chunk.length && chunk[i]! < end; i++) {
            const to = moved[chunk[i]!]!;
            if (to < 0) continue;
            if (mapped) mapped.push(to);
            else mapped = new AppendList(to);
          }
          visited += chunk.length;
          if (visited >= COPY_STEP * 16) {
            visited = 0;
            yield;
          }
        }
        if (mapped) next.incoming.set(target, mapped);
      }
      const listed = this.itemOrder.ids.length;
      for (let i = 0; i < listed; i++) {
        const id = this.itemOrder.ids.get(i);
        const docs = next.byId.get(id);
        if (docs) next.listItem(id, next.docs.get(docs[0]!).namespace, this.itemOrder.born.get(i));
        if (i % (COPY_STEP * 4) === COPY_STEP * 4 - 1) yield;
      }
      yield;
      yield* this.lexical.copyInto(next.lexical, moved, (doc) => !next.docs.get(doc).tombstone);
      yield;
      next.vectors.adoptCells(this.vectors, (doc) => (doc < end ? moved[doc]! : -1));
      yield;
      // The last step, in one turn: what changed here since the steps began.
      for (const doc of log.vectors) {
        if (doc < end && moved[doc]! >= 0) next.vectors.copy(this.vectors, doc, moved[doc]!);
      }
      for (const [i, item] of log.arrivals.entries()) next.add(item, this.vectors.vector(end + i));
      return next;
    } finally {
      this.compacting = null;
    }
  }
}

/** The tokens BM25 indexes and queries with. */
export function lexicalTokens(text: string): string[] {
  return tokenize(text).filter((token) => !STOP_WORDS.has(token));
}
