import { log } from '../log.ts';
import type { Store } from '../store.ts';
import type { Embedder } from './embedder.ts';
import type { MemoryItem } from './item.ts';
import type { MemoryItemStore } from './item-store.ts';

/**
 * Embeds items that were stored without a vector: those recorded inside another write's
 * transaction (a decision's memory, which cannot wait for a model), those written while the
 * embedding service was down, and, at start, those embedded by a different model than the one
 * configured now. Until an item's vector arrives it is found by BM25 and the graph only.
 *
 * Vectors are committed in batches, each in its own transaction, after which the vector index
 * serves them. A batch starts `WINDOW_MS` after the first item queued (a transaction per item at
 * 1,000 decisions/s cost more than the embedding), or at once when someone waits (`idle`). A
 * failed batch is retried after `RETRY_MS`.
 */
const BATCH = 64;
const WINDOW_MS = 25;
const RETRY_MS = 5_000;

type Pending = Pick<MemoryItem, 'env' | 'id' | 'version' | 'text'>;

/**
 * Where a version's vector is indexed once stored: looked up when it arrives, by the version,
 * because retention may have renumbered (or dropped) its document meanwhile (core/memory/space.ts).
 */
export interface VectorSink {
  /** Whether the version is held without a vector (not: it has one, or retention dropped it). */
  wants(version: Pick<MemoryItem, 'env' | 'id' | 'version'>): boolean;
  set(version: Pick<MemoryItem, 'env' | 'id' | 'version'>, vector: Float32Array): void;
}

export class VectorBackfill {
  private queue: Pending[] = [];
  private running: Promise<void> | null = null;
  private retry: NodeJS.Timeout | null = null;
  private window: NodeJS.Timeout | null = null;
  /** Entries waiting out their grace (see `enqueueUnlessArrived`). */
  private readonly graces = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly items: MemoryItemStore,
    private readonly embedder: Embedder,
    private readonly sink: VectorSink,
  ) {}

  get pending(): number {
    return this.queue.length;
  }

  enqueue(entry: Pending): void {
    this.queue.push(entry);
    if (!this.running && !this.retry && !this.window && !this.stopped) this.window = setTimeout(() => this.start(), WINDOW_MS).unref();
  }

  /**
   * Queues `entry` after `graceMs`, unless its vector has arrived by then (another instance
   * embedded it and its commit was applied here).
   */
  enqueueUnlessArrived(entry: Pending, graceMs: number): void {
    if (this.stopped) return;
    const timer = setTimeout(() => {
      this.graces.delete(timer);
      if (this.sink.wants(entry)) this.enqueue(entry);
    }, graceMs).unref();
    this.graces.add(timer);
  }

  /** Resolves once every queued item has its vector (or the last attempt failed); starts a waiting batch at once. */
  async idle(): Promise<void> {
    if (this.window) this.start();
    while (this.running) await this.running;
  }

  /** Finishes the batch in progress and stops; what is left is picked up at the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of [this.retry, this.window, ...this.graces]) if (timer) clearTimeout(timer);
    this.graces.clear();
    this.retry = null;
    this.window = null;
    await this.running;
  }

  private start(): void {
    if (this.window) clearTimeout(this.window);
    this.window = null;
    if (!this.running && !this.retry && !this.stopped) this.running = this.drain();
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0 && !this.stopped) {
        const batch = this.queue.slice(0, BATCH);
        const vectors = await this.embedder.embed(batch.map((entry) => entry.text));
        if (this.stopped || !this.store.isOpen) return;
        await this.store.commit(() => batch.forEach((entry, i) => this.items.putVector(entry, this.embedder.id, vectors[i]!)));
        batch.forEach((entry, i) => this.sink.set(entry, vectors[i]!));
        this.queue = this.queue.slice(batch.length);
      }
    } catch (error) {
      log.error({ err: error, items: this.queue.length, retryInMs: RETRY_MS }, 'embedding memory items failed; retrying');
      this.retry = setTimeout(() => {
        this.retry = null;
        this.running = this.drain();
      }, RETRY_MS);
      this.retry.unref();
    } finally {
      this.running = null;
    }
  }
}
