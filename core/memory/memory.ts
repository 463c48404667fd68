import { ENVS, type Env } from '../env.ts';
import { GatehouseError } from '../errors.ts';
import { sortableId } from '../ids.ts';
import { log } from '../log.ts';
import type { CommittedWrite, Store, TransactionValue } from '../store.ts';
import type { Embedder } from './embedder.ts';
import { DEFAULT_WEIGHTS, rankHybrid, type Components, type Weights } from './hybrid-ranking.ts';
import { KEY_PATTERN, NAMESPACE_PATTERN, RELATION_PATTERN, type MemoryDraft, type MemoryItem, type MemoryLink } from './item.ts';
import { ITEMS_DATABASE, MemoryItemStore, VECTORS_DATABASE, vectorOf, type StoredVector } from './item-store.ts';
import { lexicalTokens, MemorySpace, type HeldVersion } from './space.ts';
import { NOTHING_WRITTEN, withWrite, writtenAtKey, writtenOfItem, type PendingWrites } from './transaction-writes.ts';
import { Retention } from './retention.ts';
import { VectorBackfill, type VectorSink } from './vector-backfill.ts';
import { VECTOR_INDEX_DEFAULTS, type VectorIndexOptions } from './vector-index.ts';

/**
 * Versioned memory: the API the routes, the decision recorder and the objectives build on.
 *
 * A version is numbered where it is stored: `write`, inside `store.commit`, gives it its item id
 * (the one its namespace and key already have), its version and its revision against memory as
 * committed plus what the transaction wrote before it. In cluster mode a transaction that lost
 * the race for the commit stream is worked out again on the newer state (core/store.ts), so two
 * instances writing one key at once store versions N+1 and N+2 of one item, and every instance
 * numbers revisions alike, in the stream's order. A handler checks a write first (`check`), so
 * what it refuses is refused before the transaction, and answers with the stored version. The
 * query side (the spaces) takes on a version once its transaction has committed: reads and
 * queries see committed memory only.
 */
export interface MemoryQuery {
  query: string;
  namespaces?: string[];
  topK?: number;
  filters?: { attributes?: Record<string, string | number | boolean>; createdBy?: string };
  /** An ISO 8601 time or a revision number: answer as memory stood then. */
  asOf?: string | number;
  /** `expand`: hops followed from the best matches (0 turns the graph off); `relations`: only these edges. */
  graph?: { expand: number; relations?: string[] };
  /** Overrides the tuned weights (e.g. `{semantic: 0, lexical: 1, graph: 0}` for BM25 alone). */
  weights?: Weights;
}

/** What `GET /v1/memory` lists: live items, optionally of one namespace, writer or attribute values. */
export interface MemoryListing {
  namespace?: string;
  createdBy?: string;
  /** Attribute name → value, compared as text with scalar attributes. */
  attributes?: Record<string, string>;
  asOf?: string | number;
  limit: number;
  cursor?: string;
}

export interface MemoryListPage {
  revision: number;
  items: MemoryItem[];
  nextCursor: string | null;
}

export const LIST_LIMITS = { defaultLimit: 50, maxLimit: 200 };

/**
 * How long an instance waits for another instance's vector of a version it learned (see
 * `learn`) before embedding it itself: the writer's backfill commits within tens of ms.
 */
const REMOTE_VECTOR_GRACE_MS = 2_000;

/**
 * The order the rebuild adds an environment's versions in: by revision, ties broken by id, each
 * version after its predecessor, the first kept of each item (`firstKept`) after none. Cluster
 * instances of earlier releases numbered revisions each on its own, so two stored versions may
 * share one, and an item's next version may carry a lower one than the version before it; this
 * order is the same on every instance. A version whose predecessor is missing (it cannot be, but
 * a copy may be damaged) is still served, at the end.
 */
function rebuildOrder(items: MemoryItem[], firstKept: (id: string) => number): MemoryItem[] {
  const placed = new Map<string, number>();
  const waiting = new Map<string, MemoryItem>();
  const order: MemoryItem[] = [];
  const place = (item: MemoryItem) => {
    order.push(item);
    placed.set(item.id, item.version);
  };
  items.sort((a, b) => a.revision - b.revision || (a.id < b.id ? -1 : a.id > b.id ? 1 : a.version - b.version));
  for (const item of items) {
    if (item.version !== (placed.get(item.id) ?? firstKept(item.id) - 1) + 1) {
      waiting.set(`${item.id}\u0000${item.version}`, item);
      continue;
    }
    place(item);
    for (let next = waiting.get(`${item.id}\u0000${item.version + 1}`); next; next = waiting.get(`${next.id}\u0000${next.version + 1}`)) {
      waiting.delete(`${next.id}\u0000${next.version}`);
      place(next);
    }
  }
  for (const item of waiting.values()) place(item);
  return order;
}

function encodeListCursor(position: number): string {
  return Buffer.from(JSON.stringify({ after: position })).toString('base64url');
}

function decodeListCursor(cursor: string): number {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { after?: unknown };
    if (Number.isSafeInteger(parsed.after) && (parsed.after as number) >= 0) return parsed.after as number;
  } catch {
    // fall through: an undecodable cursor is the caller's mistake, reported below
  }
  throw new GatehouseError('invalid_request', 'cursor is not one GET /v1/memory returned');
}

export const QUERY_LIMITS = { maxQueryLength: 1000, maxTopK: 100, defaultTopK: 10, maxExpand: 3, defaultExpand: 1 };

export interface VersionSummary {
  version: number;
  revision: number;
  createdAt: string;
  tombstone: boolean;
}

export interface Lineage {
  /** Every version of the item up to the one returned, oldest first. */
  versions: VersionSummary[];
  /** The returned version's links, each naming the target version it was written against. */
  links: MemoryLink[];
  /** Set when the graph component ranked the item: the matched item it was reached from. */
  via: { from: string; relation: string; direction: 'out' | 'in'; hops: number } | null;
}

export interface MemoryHit {
  item: MemoryItem;
  score: number;
  scores: Components;
  raw: { cosine: number | null; bm25: number | null };
  lineage: Lineage;
}

export interface QueryAnswer {
  /** The revision the answer reflects (the latest, or the one `asOf` resolved to). */
  revision: number;
  results: MemoryHit[];
}

export interface MemoryStats {
  /** Versions loaded into the query side (retention leaves out the oldest decisions'). */
  items: number;
  /** Reading every version from LMDB and indexing it, the approximate vector index's training included. */
  rebuildMs: number;
  /** Of `rebuildMs`: training the approximate vector indexes (0 while every space is small enough to scan). */
  vectorTrainingMs: number;
}

export interface MemoryOptions {
  /** Tunes when vector search turns approximate (tests force it on small memories). */
  vectors?: VectorIndexOptions;
  /** Decision items held per environment (core/memory/retention.ts DEFAULT_RETAINED_DECISIONS); older ones leave the query side. */
  retainDecisions?: number;
}

export class Memory {
  readonly items: MemoryItemStore;
  readonly stats: MemoryStats;
  /** What the query side holds of what is stored (docs/memory.md, Retention). */
  readonly retention: Retention;
  /** Replaced whole when a compaction finishes (`Retention.afterAdd`), so every reader looks its space up per call. */
  private readonly spaces: Record<Env, MemorySpace>;
  private readonly backfill: VectorBackfill;
  /** An in-process model's synchronous form: its vectors are worked out again, never stored (see `Embedder.embedNow`). */
  private readonly computeVector: ((text: string) => Float32Array) | null;
  private readonly lateWriters: Array<() => Promise<void>> = [];
  private readonly committedListeners: Array<(item: MemoryItem) => void> = [];
  /** Puts a compacted space in place of `env`'s; made once, as it is handed over at every version added. */
  private readonly replaceSpace = (env: Env, next: MemorySpace): void => {
    this.spaces[env] = next;
  };
  /**
   * Where a version's vector goes once known (the backfill's, another instance's): its document,
   * looked up when it arrives, as a compaction may have renumbered or dropped it meanwhile.
   */
  private readonly vectorSink: VectorSink = {
    wants: (item) => {
      const space = this.spaces[item.env];
      const doc = space.docOf(item.id, item.version);
      return doc !== undefined && !space.vectors.has(doc);
    },
    set: (item, vector) => {
      const space = this.spaces[item.env];
      const doc = space.docOf(item.id, item.version);
      if (doc !== undefined) space.setVector(doc, vector);
    },
  };
  /** What the write transaction under way has written (outside one: nothing); never stored. */
  private readonly pending: TransactionValue<PendingWrites>;

  constructor(
    private readonly store: Store,
    readonly embedder: Embedder,
    options: MemoryOptions = {},
  ) {
    this.items = new MemoryItemStore(store);
    this.retention = new Retention(store, options.retainDecisions);
    this.pending = store.transactionValue(
      () => NOTHING_WRITTEN,
      () => {},
    );
    this.backfill = new VectorBackfill(store, this.items, embedder, this.vectorSink);
    this.computeVector = embedder.embedNow ? (text) => embedder.embedNow!(text) : null;
    const vectors = options.vectors ?? VECTOR_INDEX_DEFAULTS;
    this.spaces = { sandbox: new MemorySpace(embedder.dimensions, vectors), production: new MemorySpace(embedder.dimensions, vectors) };
    this.stats = this.rebuild();
    store.onReplicated((writes, node) => this.learn(writes, node === store.nodeId ? 0 : REMOTE_VECTOR_GRACE_MS));
  }

  /**
   * Cluster mode: adds the versions a commit from the stream wrote (applied to LMDB by its `ops`)
   * to the query side, with their vectors, so every instance answers for every item. A version
   * written without a vector (a decision's) gets it from its writer's backfill, which arrives as
   * a later commit; another instance embeds it only if that has not come after `graceMs`
   * (REMOTE_VECTOR_GRACE_MS: its writer stopped, say), instead of every instance embedding every
   * item. The writer's own commit may reach it through the stream first: it embeds at once.
   */
  private learn(writes: readonly CommittedWrite[], graceMs: number): void {
    for (const write of writes) {
      if (write.db === VECTORS_DATABASE) {
        if (this.computeVector) continue;
        const [env, id, version] = write.key as [Env, string, number];
        const item = { env, id, version };
        if (!this.spaces[env] || !this.vectorSink.wants(item)) continue;
        const stored = write.value() as StoredVector | undefined;
        const vector = stored && vectorOf(stored, this.embedder.id);
        if (vector) this.vectorSink.set(item, vector);
        continue;
      }
      if (write.db !== ITEMS_DATABASE) continue;
      const item = write.value() as MemoryItem | undefined;
      if (item) this.addCommitted(item, this.storedVector(item), graceMs);
    }
  }

  /**
   * Adds a committed version to its space, once: this instance's own commit may have reached it
   * through the commit stream first. A version without a vector is embedded in the background,
   * after `graceMs` (another instance's, whose writer sends the vector in a later commit).
   */
  private addCommitted(item: MemoryItem, vector: Float32Array | null, graceMs = 0): void {
    const space = this.spaces[item.env];
    if ((space.latestVersion(item.id) ?? 0) >= item.version) return;
    const indexed = this.vectorToIndex(item, vector);
    space.add(item, indexed);
    for (const listener of this.committedListeners) listener(item);
    this.retention.afterAdd(item.env, space, this.replaceSpace);
    if (indexed || item.tombstone) return;
    if (graceMs > 0) this.backfill.enqueueUnlessArrived(item, graceMs);
    else this.backfill.enqueue(item);
  }

  /**
   * Reloads the versions retention keeps from LMDB (`Retention.atStart`), in revision order,
   * with the vectors of the current model.
   */
  private rebuild(): MemoryStats {
    const started = performance.now();
    const { horizons, kept, firstKept } = this.retention.atStart(() => this.storedItems());
    let count = 0;
    let vectorTrainingMs = 0;
    for (const env of ENVS) {
      const space = this.spaces[env];
      space.horizon = horizons[env];
      const order = rebuildOrder(kept[env], (id) => firstKept.get(`${env}\0${id}`)!);
      kept[env] = [];
      space.vectors.bulkLoad(() => {
        for (const item of order) {
          const vector = this.vectorToIndex(item, this.storedVector(item));
          space.add(item, vector);
          if (!vector && !item.tombstone) this.backfill.enqueue(item);
          count++;
        }
      });
      vectorTrainingMs += space.vectors.trainingMs;
    }
    return { items: count, rebuildMs: performance.now() - started, vectorTrainingMs };
  }

  /** Every stored item's versions, oldest first, item by item (LMDB's key order: environment, id, version). */
  private *storedItems(): Generator<MemoryItem[]> {
    let versions: MemoryItem[] = [];
    for (const item of this.items.all()) {
      const previous = versions[0];
      if (previous && (previous.id !== item.id || previous.env !== item.env)) {
        yield versions;
        versions = [];
      }
      versions.push(item);
    }
    if (versions.length > 0) yield versions;
  }

  space(env: Env): MemorySpace {
    return this.spaces[env];
  }

  /** The revision `asOf` names (the latest when absent), so a reader can pin one memory state across several reads. */
  revision(env: Env, asOf?: string | number): number {
    const space = this.spaces[env];
    return asOf === undefined ? space.revision : this.revisionFor(space, asOf);
  }

  /**
   * The vector a version is indexed with: worked out again for an in-process model, otherwise
   * the one stored with it or given to `write` (null until the backfill stores one).
   */
  private vectorToIndex(item: MemoryItem, given: Float32Array | null): Float32Array | null {
    if (item.tombstone) return null;
    return this.computeVector ? this.computeVector(item.text) : given;
  }

  /** The vector stored for a version, for a model whose vectors are stored (null otherwise, or while it has none). */
  storedVector(item: Pick<MemoryItem, 'env' | 'id' | 'version' | 'tombstone'>): Float32Array | null {
    if (item.tombstone || this.computeVector) return null;
    return this.items.vector(item, this.embedder.id) ?? null;
  }

  /**
   * The vector to give `write` for `text`, from a model that runs elsewhere; null if it failed
   * (the item is backfilled later) and for an in-process model (worked out as it is indexed).
   */
  async embedForWrite(text: string): Promise<Float32Array | null> {
    if (this.computeVector) return null;
    try {
      const [vector] = await this.embedder.embed([text]);
      return vector ?? null;
    } catch (error) {
      log.error({ err: error }, 'embedding a memory write failed; it will be retried');
      return null;
    }
  }

  /**
   * Refuses (400) a draft `write` would refuse, against memory as committed: a handler checks
   * before the transaction, where a refusal is the request's answer.
   */
  check(env: Env, draft: MemoryDraft): void {
    this.validated(env, draft);
  }

  /**
   * Stores the next version of (namespace, key), or a new item, and returns it; call inside
   * `store.commit`. Its id, version, revision and links' versions are worked out here, against
   * committed memory and the transaction's earlier writes (see the module comment).
   */
  write(env: Env, createdBy: string, draft: MemoryDraft, vector: Float32Array | null, tombstone = false): MemoryItem {
    const space = this.spaces[env];
    const { id, links } = this.validated(env, draft);
    const pending = this.pending.get();
    const previous = this.current(env, id);
    const item: MemoryItem = {
      id,
      env,
      namespace: draft.namespace,
      key: draft.key ?? id,
      version: (previous?.version ?? 0) + 1,
      revision: space.revision + pending.written[env] + 1,
      text: draft.text,
      attributes: draft.attributes ?? {},
      links,
      tombstone,
      // Revisions never go back in time, so `asOf` by time and by revision agree.
      createdAt: new Date(Math.max(Date.now(), space.lastTime)).toISOString(),
      createdBy,
    };
    this.items.put(item);
    if (vector && !tombstone && !this.computeVector) this.items.putVector(item, this.embedder.id, vector);
    this.pending.set(withWrite(pending, item));
    this.store.afterCommit(() => this.addCommitted(item, tombstone ? null : vector));
    return item;
  }

  /** The draft's item id (its key's, or a new one) and its links resolved; 400 for a draft that cannot be written. */
  private validated(env: Env, draft: MemoryDraft): { id: string; links: MemoryLink[] } {
    if (!NAMESPACE_PATTERN.test(draft.namespace)) throw new GatehouseError('invalid_request', `namespace '${draft.namespace}' must match ${NAMESPACE_PATTERN.source}`);
    if (draft.key !== undefined && !KEY_PATTERN.test(draft.key)) throw new GatehouseError('invalid_request', `key '${draft.key}' must match ${KEY_PATTERN.source}`);
    const id = (draft.key === undefined ? undefined : this.idForKey(env, draft.namespace, draft.key)) ?? sortableId('mem_');
    return { id, links: this.resolveLinks(env, id, draft.links ?? []) };
  }

  /**
   * The newest version of `id`, a tombstone included, as committed or as this transaction wrote
   * it: for writers deciding whether a new version is needed, from process memory, where an LMDB
   * read per item would cost more than the write it saves.
   */
  current(env: Env, id: string): HeldVersion | undefined {
    const space = this.spaces[env];
    const held = writtenOfItem(this.pending.get(), env, id) ?? space.latest(id);
    // An item retention dropped is still stored: its next version follows its last.
    return held ?? (this.retention.dropped.mayBeDropped(env, id) ? this.items.latest(env, id) : undefined);
  }

  /** Refuses (404) an item that does not exist and (409) one already deleted: before deleting, and again inside the transaction. */
  assertDeletable(env: Env, id: string): void {
    const current = this.current(env, id);
    if (!current) throw new GatehouseError('not_found', `no memory item ${id}`);
    if (current.tombstone) throw new GatehouseError('conflict', `memory item ${id} is already deleted (version ${current.version})`);
  }

  /** Stores a tombstone version of `id` and returns it; call inside `store.commit`, after `assertDeletable`. */
  delete(env: Env, deletedBy: string, id: string): MemoryItem {
    const current = this.current(env, id)!;
    const item = this.items.get(env, id, current.version)!;
    return this.write(env, deletedBy, { namespace: item.namespace, key: item.key, text: '' }, null, true);
  }

  /**
   * One version of item `id`: the one asked for, the one current at `asOf`, or the latest. A
   * deleted item is 404 unless a version is named (old versions stay readable).
   */
  get(env: Env, id: string, at: { version?: number; asOf?: string | number } = {}): MemoryItem {
    let item: MemoryItem | undefined;
    if (at.version !== undefined) {
      item = this.items.get(env, id, at.version);
      if (!item) throw new GatehouseError('not_found', `memory item ${id} has no version ${at.version}`);
      return item;
    }
    if (at.asOf !== undefined) {
      const space = this.spaces[env];
      const revision = this.revisionFor(space, at.asOf);
      if (!space.holds(id) && this.retention.dropped.mayBeDropped(env, id)) {
        // Dropped by retention: its versions in LMDB say which was current then.
        item = this.items.versions(env, id).filter((version) => version.revision <= revision).at(-1);
      } else {
        const doc = space.docAt(id, revision);
        item = doc === undefined ? undefined : this.items.get(env, id, space.doc(doc).version);
      }
    } else {
      item = this.items.latest(env, id);
    }
    if (!item) throw new GatehouseError('not_found', `no memory item ${id}${at.asOf === undefined ? '' : ` as of ${at.asOf}`}`);
    if (item.tombstone) throw new GatehouseError('not_found', `memory item ${id} was deleted at version ${item.version}`, { deletedVersion: item.version });
    return item;
  }

  /** Every committed version of `id`, oldest first; 404 if there is none. */
  versions(env: Env, id: string): MemoryItem[] {
    const versions = this.items.versions(env, id);
    if (versions.length === 0) throw new GatehouseError('not_found', `no memory item ${id}`);
    return versions;
  }

  /** The id of the item at (namespace, key), if one was ever written (or is, by this transaction). */
  idForKey(env: Env, namespace: string, key: string): string | undefined {
    const space = this.spaces[env];
    const held = writtenAtKey(this.pending.get(), env, namespace, key)?.id ?? space.idForKey(namespace, key);
    return held ?? this.retention.dropped.idForKey(env, namespace, key);
  }

  /** The id of the item `ref` names — its id, or `namespace:key` — if it was ever written. */
  resolve(env: Env, ref: string): string | undefined {
    return this.currentOf(env, ref)?.id;
  }

  /** The newest version of the item `ref` names (see `current`). */
  private currentOf(env: Env, ref: string) {
    // Ids never hold a colon; labels always do.
    const separator = ref.indexOf(':');
    const id = separator < 0 ? ref : this.idForKey(env, ref.slice(0, separator), ref.slice(separator + 1));
    return id === undefined ? undefined : this.current(env, id);
  }

  /** Items live now (or at `asOf`) linking to `id`, with the link; e.g. the decisions serving an objective. */
  linkedFrom(env: Env, id: string, relation: string, asOf?: string | number): Array<{ item: MemoryItem; link: MemoryLink }> {
    const space = this.spaces[env];
    const revision = asOf === undefined ? space.revision : this.revisionFor(space, asOf);
    const found: Array<{ item: MemoryItem; link: MemoryLink }> = [];
    for (const edge of space.neighbours(id, revision, new Set([relation]))) {
      if (edge.direction !== 'in') continue;
      const source = space.doc(edge.doc);
      const item = this.items.get(env, source.id, source.version);
      if (item) found.push({ item, link: edge.link });
    }
    return found;
  }

  /** Live items of `namespace` now (or at `asOf`), oldest first. */
  list(env: Env, namespace: string, asOf?: string | number): MemoryItem[] {
    const space = this.spaces[env];
    const revision = asOf === undefined ? space.revision : this.revisionFor(space, asOf);
    return space
      .liveIn(namespace, revision)
      .map((doc) => this.items.get(env, space.doc(doc).id, space.doc(doc).version))
      .filter((item): item is MemoryItem => item !== undefined);
  }

  /**
   * One page of the live items now (or at `asOf`), oldest first (by first version), filtered.
   * The cursor is the position of the page's last item, so items written meanwhile join the
   * end and a page never repeats or skips one.
   */
  listPage(env: Env, listing: MemoryListing): MemoryListPage {
    const space = this.spaces[env];
    const revision = listing.asOf === undefined ? space.revision : this.revisionFor(space, listing.asOf);
    const wanted = Object.entries(listing.attributes ?? {});
    const found = space.liveItems(revision, {
      namespace: listing.namespace,
      after: listing.cursor === undefined ? -1 : decodeListCursor(listing.cursor),
      limit: listing.limit + 1,
      accept: (doc) => {
        const item = space.doc(doc);
        if (listing.createdBy !== undefined && item.createdBy !== listing.createdBy) return false;
        return wanted.every(([name, value]) => {
          const held = item.attributes[name];
          return held !== undefined && held !== null && typeof held !== 'object' && String(held) === value;
        });
      },
    });
    const page = found.slice(0, listing.limit);
    const items = page
      .map(({ doc }) => this.items.get(env, space.doc(doc).id, space.doc(doc).version))
      .filter((item): item is MemoryItem => item !== undefined);
    const nextCursor = found.length > listing.limit ? encodeListCursor(page.at(-1)!.position) : null;
    return { revision, items, nextCursor };
  }

  /** Hybrid retrieval; see core/memory/hybrid-ranking.ts for the formula. */
  async query(env: Env, request: MemoryQuery): Promise<QueryAnswer> {
    const space = this.spaces[env];
    const text = request.query.trim();
    if (text.length === 0) throw new GatehouseError('invalid_request', 'query is empty');
    if (text.length > QUERY_LIMITS.maxQueryLength) throw new GatehouseError('invalid_request', `query is longer than ${QUERY_LIMITS.maxQueryLength} characters`);
    const topK = request.topK ?? QUERY_LIMITS.defaultTopK;
    if (!Number.isInteger(topK) || topK < 1 || topK > QUERY_LIMITS.maxTopK) throw new GatehouseError('invalid_request', `topK must be an integer from 1 to ${QUERY_LIMITS.maxTopK}`);
    const expand = request.graph?.expand ?? QUERY_LIMITS.defaultExpand;
    if (!Number.isInteger(expand) || expand < 0 || expand > QUERY_LIMITS.maxExpand) throw new GatehouseError('invalid_request', `graph.expand must be an integer from 0 to ${QUERY_LIMITS.maxExpand}`);
    const unknown = (request.namespaces ?? []).filter((namespace) => !space.hasNamespace(namespace));
    if (unknown.length > 0) {
      throw new GatehouseError('invalid_request', `unknown namespace${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`, { namespaces: space.namespaces() });
    }
    const weights = request.weights ?? DEFAULT_WEIGHTS;
    if (!(weights.semantic + weights.lexical > 0)) throw new GatehouseError('invalid_request', 'weights.semantic or weights.lexical must be above 0');
    const revision = request.asOf === undefined ? space.revision : this.revisionFor(space, request.asOf);

    const namespaces = request.namespaces?.length ? new Set(request.namespaces) : null;
    const wanted = Object.entries(request.filters?.attributes ?? {});
    const createdBy = request.filters?.createdBy;
    const accept = (doc: number) => {
      if (!space.live(doc, revision)) return false;
      const item = space.doc(doc);
      if (namespaces && !namespaces.has(item.namespace)) return false;
      if (createdBy !== undefined && item.createdBy !== createdBy) return false;
      return wanted.every(([name, value]) => item.attributes[name] === value);
    };
    const vector = weights.semantic > 0 ? await this.embedQuery(text) : null;
    const ranked = rankHybrid({
      space,
      revision,
      accept,
      lexical: weights.lexical > 0 ? space.lexical.scores(lexicalTokens(text), accept) : null,
      vector,
      weights,
      graph: { expand, relations: request.graph?.relations?.length ? new Set(request.graph.relations) : null },
      topK,
    });
    const results: MemoryHit[] = [];
    for (const hit of ranked) {
      const doc = space.doc(hit.doc);
      const item = this.items.get(env, doc.id, doc.version);
      if (!item) continue;
      results.push({ item, score: hit.score, scores: hit.components, raw: hit.raw, lineage: this.lineage(space, item, revision, hit.via) });
    }
    return { revision, results };
  }

  private async embedQuery(text: string): Promise<Float32Array> {
    try {
      const [vector] = await this.embedder.embed([text]);
      return vector!;
    } catch (error) {
      throw new GatehouseError('not_ready', `the embedding model is unavailable: ${(error as Error).message}`);
    }
  }

  private lineage(space: MemorySpace, item: MemoryItem, revision: number, via: Lineage['via']): Lineage {
    const versions = space.history(item.id, revision).map((doc) => {
      const version = space.doc(doc);
      return { version: version.version, revision: space.revisionOf(doc), createdAt: new Date(space.time(doc)).toISOString(), tombstone: version.tombstone };
    });
    return { versions, links: item.links, via };
  }

  private resolveLinks(env: Env, self: string, links: NonNullable<MemoryDraft['links']>): MemoryLink[] {
    const resolved: MemoryLink[] = [];
    const seen = new Set<string>();
    for (const { to, relation, version: pinned } of links) {
      if (!RELATION_PATTERN.test(relation)) throw new GatehouseError('invalid_request', `relation '${relation}' must match ${RELATION_PATTERN.source}`);
      const target = this.currentOf(env, to);
      if (!target) throw new GatehouseError('invalid_request', `link target ${to} is not a memory item (use an id or namespace:key)`);
      const { id } = target;
      if (pinned !== undefined && (pinned < 1 || pinned > target.version)) throw new GatehouseError('invalid_request', `link target ${to} has no version ${pinned}`);
      const version = pinned ?? target.version;
      if (id === self) throw new GatehouseError('invalid_request', `an item cannot link to itself (${to})`);
      if (seen.has(`${relation}\0${id}`)) continue;
      seen.add(`${relation}\0${id}`);
      resolved.push({ to: id, relation, version });
    }
    return resolved;
  }

  /**
   * Resolves `asOf` to a revision of `space`; a malformed value, a future revision or one before
   * the retention horizon (memory no longer holds what was visible then) is a 400.
   */
  private revisionFor(space: MemorySpace, asOf: string | number): number {
    const text = String(asOf).trim();
    let revision: number;
    if (/^\d+$/.test(text)) {
      revision = Number(text);
      if (revision > space.revision) throw new GatehouseError('invalid_request', `asOf revision ${revision} is ahead of memory (latest revision ${space.revision})`);
    } else {
      const time = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2}))?$/.test(text) ? Date.parse(text) : NaN;
      if (Number.isNaN(time)) throw new GatehouseError('invalid_request', `asOf must be an ISO 8601 time (e.g. 2026-01-31T12:00:00Z) or a revision number, got '${text}'`);
      revision = space.revisionAt(time);
    }
    if (revision < space.horizon) {
      throw new GatehouseError('invalid_request', `asOf ${text} is before memory's retention horizon (revision ${space.horizon}): memory holds the newest ${this.retention.retain} decisions, and what was visible only before them is no longer held (docs/memory.md)`, { horizon: space.horizon });
    }
    return revision;
  }

  /**
   * Calls `listener` with each version as the spaces take it on: in commit order, this
   * instance's and (in cluster mode) every other's.
   */
  onCommitted(listener: (item: MemoryItem) => void): void {
    this.committedListeners.push(listener);
  }

  /**
   * Registers a writer that records into memory after the transaction it describes (decisions'
   * memory): `pending` resolves once what it has taken on so far is stored.
   */
  addLateWriter(pending: () => Promise<void>): void {
    this.lateWriters.push(pending);
  }

  /** Resolves once the embedding model is ready to embed without holding the event loop (`Embedder.warm`). */
  async embedderReady(): Promise<void> {
    await this.embedder.warm?.();
  }

  /** Resolves once what late writers took on is stored: readers that must see it wait here first. */
  async written(): Promise<void> {
    // In `--threads` mode, the decisions the other threads committed are queued for recording first.
    this.store.catchUpThreads();
    for (const pending of this.lateWriters) await pending();
  }

  /** Calls `listener` after a compaction replaced `env`'s space (holders of item ids drop the ones it let go). */
  onCompacted(listener: (env: Env) => void): void {
    this.retention.onCompacted(listener);
  }

  /** Whether `env`'s query side holds item `id`: retention drops the oldest decisions' items. */
  holds(env: Env, id: string): boolean {
    return this.spaces[env].holds(id);
  }

  /** Waits until every stored item has its vector and no compaction or vector training is under way (tests, the bench, shutdown). */
  async settled(): Promise<void> {
    await this.written();
    await this.backfill.idle();
    await this.retention.idle();
    for (const env of ENVS) await this.spaces[env].vectors.settled();
  }

  async close(): Promise<void> {
    await this.written();
    await this.backfill.stop();
    await this.retention.idle();
    for (const env of ENVS) await this.spaces[env].vectors.settled();
  }
}
