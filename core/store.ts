import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { open, TransactionFlags, type Database, type Key, type RootDatabase } from 'lmdb';

/**
 * The embedded LMDB environment under the data directory. Every named database lives in one
 * environment so a decision, its idempotency record and its audit entry commit in one
 * transaction.
 */
export interface StoreOptions {
  dataDir: string;
  /**
   * `commit` (default) answers once the transaction is written to the file: it survives the
   * process being killed, and the OS writes it out on its own schedule (and at the latest within
   * `syncIntervalMs`). `flush` answers once the pages are on disk: it survives power loss.
   */
  durability?: 'commit' | 'flush';
  /** In `commit` durability, how often the file is flushed to disk in the background (default 1000). */
  syncIntervalMs?: number;
}

interface PendingCommit {
  apply: () => unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  /** `afterCommit` callbacks registered by this transaction. */
  after: Array<() => void>;
}

/** Where each database keeps its shared msgpack structures (see `Store.database`). */
const SHARED_STRUCTURES = Symbol.for('structures');

/** Commit before returning; the environment's sync mode decides when the pages reach the disk. */
const COMMIT_NOW = TransactionFlags.SYNCHRONOUS_COMMIT | TransactionFlags.NO_SYNC_FLUSH;

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

function settle(batch: PendingCommit[], outcomes: Outcome[]): void {
  batch.forEach((pending, i) => {
    const outcome = outcomes[i]!;
    if (!outcome.ok) return pending.reject(outcome.error);
    pending.resolve(outcome.value);
    for (const fn of pending.after) fn();
  });
}

export class Store {
  readonly root: RootDatabase;
  readonly path: string;
  private readonly durability: 'commit' | 'flush';
  private readonly databases = new Map<string, Database<any, any>>();
  /** Callbacks registered by the transaction currently being applied (see `afterCommit`). */
  private committing: Array<() => void> | null = null;
  /** Transactions waiting for the end of this event-loop turn (see `commit`). */
  private queued: PendingCommit[] = [];
  private batchScheduled = false;
  /** In `flush` durability: a batch is being committed and flushed; the next one waits for it. */
  private batchInFlight = false;
  private readonly syncTimer: NodeJS.Timeout | null;
  private closed = false;

  private constructor(root: RootDatabase, path: string, durability: 'commit' | 'flush', syncIntervalMs: number) {
    this.root = root;
    this.path = path;
    this.durability = durability;
    this.syncTimer = durability === 'commit' ? setInterval(() => void this.syncToDisk().catch(() => {}), syncIntervalMs).unref() : null;
  }

  /**
   * `commit` durability opens LMDB without a sync per commit: a committed transaction is in the
   * OS's page cache, which a killed process cannot lose, and a commit costs tens of microseconds
   * instead of waiting for the disk (measured ~0.1 ms against ~5 ms per commit on this kind of
   * machine, the difference between a 2 ms p99 and none). The price, as LMDB documents for
   * MDB_NOSYNC: an OS crash or power loss may lose the last transactions, and on a file system
   * that reorders writes may damage the file — `gatehouse audit verify` detects it. `flush` keeps
   * LMDB's ordered, synced commits for deployments that need to survive power loss.
   */
  static open(options: StoreOptions): Store {
    mkdirSync(options.dataDir, { recursive: true });
    const path = join(options.dataDir, 'gatehouse.mdb');
    const durability = options.durability ?? 'commit';
    // A generous initial map (sparse on disk) spares the writers the pause of regrowing it early.
    const root = open({ path, maxDbs: 32, mapSize: 2 * 1024 ** 3, noSync: durability === 'commit' });
    return new Store(root, path, durability, options.syncIntervalMs ?? 1000);
  }

  /**
   * A named database, opened once and shared by every module that asks for it.
   *
   * Values are msgpack records whose key lists are stored once per database (lmdb-js shared
   * structures) instead of inline in every value: a third of the encode and decode time of a
   * decision's records and a third smaller. Values written before carry their key lists inline
   * and still read back.
   */
  database<V, K extends Key = Key>(name: string): Database<V, K> {
    let db = this.databases.get(name);
    if (!db) {
      db = this.root.openDB<V, K>({ name, sharedStructuresKey: SHARED_STRUCTURES });
      this.databases.set(name, db);
    }
    return db as Database<V, K>;
  }

  /**
   * After a rolled-back transaction: a value encoded in it may have added a key list to its
   * database's shared structures, saved in the same transaction and so rolled back with it. The
   * encoder must not go on referring to it, so each database reloads its structures from what is
   * stored before it encodes again.
   */
  private forgetUnsavedStructures(): void {
    for (const db of this.databases.values()) {
      const structures = (db as unknown as { encoder?: { structures?: { uninitialized?: boolean } } }).encoder?.structures;
      if (structures) structures.uninitialized = true;
    }
  }

  /**
   * Runs `apply` inside a write transaction and resolves once it is committed (see `open` for
   * what each durability promises).
   *
   * Group commit: every `commit` called in the same event-loop turn joins one LMDB transaction,
   * applied one after another with no child transaction each (a child transaction per request
   * cost about 8 µs, most of the batch's overhead). That makes a rule for `apply`: refuse only
   * before writing anything (read what you must check first), and do nothing to process memory
   * but through `afterCommit`. Then an `apply` that throws anyway (a bug, a full map) costs only
   * time: the batch is rolled back and every `apply` in it runs again in a transaction of its
   * own, so the failing one rejects its own promise and the others commit as if alone.
   *
   * In `commit` durability the batch commits synchronously at the end of the turn, which costs
   * less than handing it to lmdb-js's writer thread and back. In `flush` durability it goes
   * through the writer thread, which also waits for the disk; commits queued meanwhile form the
   * next batch.
   */
  commit<T>(apply: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new Error('the store is closed'));
    return new Promise<T>((resolve, reject) => {
      this.queued.push({ apply, resolve: resolve as (value: unknown) => void, reject, after: [] });
      this.scheduleBatch();
    });
  }

  private scheduleBatch(): void {
    if (this.batchScheduled || this.batchInFlight || this.queued.length === 0) return;
    this.batchScheduled = true;
    setImmediate(() => {
      this.batchScheduled = false;
      if (this.durability === 'commit') this.commitBatchNow();
      else void this.commitBatchFlushed();
    });
  }

  private commitBatchNow(): void {
    const batch = this.takeBatch();
    let outcomes: Outcome[];
    try {
      const values = this.root.transactionSync(() => batch.map((pending) => this.applyOne(pending)), COMMIT_NOW);
      outcomes = values.map((value) => ({ ok: true, value }));
    } catch {
      // Rare (see `commit`): the batch is rolled back, and each runs again on its own.
      this.rolledBack(batch);
      outcomes = batch.map((pending) => this.applyIsolated(pending, COMMIT_NOW));
    }
    settle(batch, outcomes);
  }

  /**
   * lmdb-js's asynchronous `transaction` does not roll back what a callback wrote before it threw,
   * so in `flush` durability each `apply` keeps a child transaction of its own: the slower but
   * self-contained form, for deployments that wait for the disk anyway.
   */
  private async commitBatchFlushed(): Promise<void> {
    const batch = this.takeBatch();
    this.batchInFlight = true;
    try {
      const outcomes = await this.root.transaction(() => batch.map((pending) => this.applyIsolated(pending)));
      await this.root.flushed;
      settle(batch, outcomes);
    } catch (error) {
      this.rolledBack(batch);
      for (const pending of batch) pending.reject(error);
    } finally {
      this.batchInFlight = false;
      this.scheduleBatch();
    }
  }

  /**
   * One `apply` in a transaction of its own (a child one, without `flags`, when a transaction is
   * open): its outcome, its writes rolled back if it threw.
   */
  private applyIsolated(pending: PendingCommit, flags?: number): Outcome {
    try {
      let value: unknown;
      // Nothing is returned to lmdb-js: a thenable result (an lmdb-js put's promise, say) would
      // make it finish the transaction asynchronously.
      this.root.transactionSync(() => {
        value = this.applyOne(pending);
      }, flags);
      return { ok: true, value };
    } catch (error) {
      this.rolledBack([pending]);
      return { ok: false, error };
    }
  }

  /** What a rolled-back transaction leaves to undo in process memory. */
  private rolledBack(batch: PendingCommit[]): void {
    for (const pending of batch) pending.after.length = 0;
    this.forgetUnsavedStructures();
  }

  private takeBatch(): PendingCommit[] {
    const batch = this.queued;
    this.queued = [];
    return batch;
  }

  private applyOne(pending: PendingCommit): unknown {
    this.committing = pending.after;
    try {
      return pending.apply();
    } finally {
      this.committing = null;
    }
  }

  /**
   * Runs `fn` once the transaction being applied has committed, and never if it fails: work that
   * must only start from stored state (sending an approved held request) is triggered here. Call
   * only from inside a `commit` callback.
   */
  afterCommit(fn: () => void): void {
    if (!this.committing) throw new Error('afterCommit is only valid inside store.commit');
    this.committing.push(fn);
  }

  /** Flushes the file to disk (mdb_env_sync, off the main thread). */
  private syncToDisk(): Promise<void> {
    const root = this.root as RootDatabase & { sync(callback: (error?: Error) => void): void };
    return new Promise((resolve, reject) => root.sync((error) => (error ? reject(error) : resolve())));
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.syncTimer) clearInterval(this.syncTimer);
    while (this.batchInFlight || this.batchScheduled || this.queued.length) await new Promise((resolve) => setImmediate(resolve));
    await this.root.committed;
    if (this.durability === 'commit') await this.syncToDisk();
    await this.root.close();
  }
}
