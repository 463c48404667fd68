import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { asBinary, open, TransactionFlags, type Database, type Key, type RootDatabase } from 'lmdb';
import { decodeValue, encodeValue, type WriteOp } from './cluster/write-set.ts';
import { GatehouseError } from './errors.ts';

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
  /**
   * In `commit` durability, and in cluster mode, how long a commit waits for others to join its
   * transaction (default 0: until the end of the event-loop turn). At low rates each request
   * otherwise commits alone. On a single node 1 ms adds about 1 ms at p50, and saved 8% of the
   * CPU per decision at 1,000/s in one measurement and nothing in another (README,
   * *Benchmarks*), so it is off there. In cluster mode each commit is one publish to a
   * replicated stream, which costs the NATS servers about as much CPU whatever it carries, so the
   * server sets a window there by default (proxy/server.ts, CLUSTER_COMMIT_WINDOW_MS).
   */
  commitWindowMs?: number;
  /**
   * In `commit` durability, write pages straight into the memory map (LMDB's MDB_WRITEMAP)
   * instead of copying each commit's pages to the file: 10% less CPU per decision at 1,000/s
   * (372 against 412 µs, five interleaved rounds), where each request commits alone. LMDB then
   * allows no nested transaction, which only `flush` durability and cluster mode open, and a
   * writer's bug could no longer be kept from the map. The server asks for it on a single node in
   * `commit` durability; other processes (the CLI) open without it, as LMDB's mixing of the two
   * costs only the flush-to-disk guarantee that `commit` durability does not give.
   */
  writemap?: boolean;
}

/**
 * The cluster seen from the store (core/cluster/replica.ts): where a batch's write set is
 * published, in the one order every instance applies.
 */
export interface CommitReplication {
  /**
   * Publishes a write set that must directly follow sequence `base`; resolves to its own
   * sequence. Rejects with `CommitConflict` when another commit took that place first, and with
   * another error when the cluster cannot take it (no quorum, unreachable).
   */
  publish(ops: WriteOp[], base: number): Promise<number>;
  /** The largest write set one message may carry; a batch is split to fit. */
  readonly maxBytes: number;
  /**
   * Resolves once this store has applied every commit through `seq` or, without it, every commit
   * the cluster held when it was called.
   */
  catchUp(seq?: number | null): Promise<void>;
}

/**
 * How the threads of one `--threads` process learn each other's commits
 * (core/threads/thread-group.ts). They share one LMDB environment, so another thread's commit is
 * already stored; what a thread must learn is what its process memory holds of it (memory's
 * query side), in the order the commits were made.
 */
export interface ThreadCommits {
  /** This thread's name in the commits it makes. */
  readonly node: string;
  /** Tells the other threads that want to hear of commits at once (`want`) that this one committed. */
  announce(): void;
  /** Wakes thread `index` to learn the commits made so far (0: the thread that does what is done once per process). */
  wake(index: number): void;
  /** While on, this thread is woken by the other threads' commits (counted: each `true` needs its `false`). */
  want(on: boolean): void;
  /** Records how far this thread has learned the commit log (thread 0's position is the one kept). */
  learned(seq: number): void;
  /** How far thread 0, the one thread that reads what the log carries, has learned it: entries up to there may be pruned. */
  learnedByMain(): number;
  /** Calls `listener` when another thread has woken this one. */
  onAnnounced(listener: () => void): void;
}

/** A write of a commit this instance or thread did not make: where, and the value it stored. */
export interface CommittedWrite {
  db: string;
  key: Key;
  /** The value, decoded; undefined for a removal. */
  value(): unknown;
}

/** Another instance's commit came first: the batch is worked out again on the newer state. */
export class CommitConflict extends Error {
  constructor(
    message: string,
    /** The stream's last sequence when it refused, when it said (the commits to apply first). */
    readonly lastSeq: number | null,
  ) {
    super(message);
  }
}

/**
 * Databases whose writes stay on this instance in cluster mode: the audit checkpoints each
 * instance signs with its own key over what it holds, the signature replay guard, written
 * outside any commit as a request arrives, and where the keys of the memory items this
 * instance's retention dropped lead (core/memory/evicted-items.ts), each instance's own index.
 */
const LOCAL_ONLY = new Set(['audit-checkpoints', 'signature-replay', 'memory-evicted-keys']);

/**
 * In `--threads` mode, the commits that wrote to a database the threads learn from (the ones
 * `joinThreads` names): sequence → the thread that made it and the keys it wrote there, so each
 * thread learns them in commit order, inside its next write transaction at the latest.
 */
const THREAD_LOG = 'thread-commits';

interface ThreadLogEntry {
  node: string;
  writes: Array<[string, Key]>;
}

/** Where an instance records the last commit of the cluster's stream it has applied. */
const APPLIED_KEY = 'cluster-applied';

/** Which cluster stream this data directory is a copy of. */
const STREAM_KEY = 'cluster-stream';

/** Times, and for how long, a batch is worked out again after losing the race to other instances' commits. */
const MAX_CONFLICT_RETRIES = 50;
const CONFLICT_DEADLINE_MS = 10_000;

/** The writes a batch made while it was worked out, split by where they go. */
interface Captured {
  replicated: WriteOp[];
  local: WriteOp[];
}

/**
 * Why a batch the cluster did not take is refused: a definite refusal wrote nothing; a publish
 * that was never acknowledged may have been stored (the reader then applies it), which only an
 * idempotent retry can tell apart.
 */
function unavailable(error: unknown): GatehouseError {
  const message = (error as Error).message;
  if ((error as { name?: string }).name === 'TimeoutError' || /timeout/i.test(message)) {
    return new GatehouseError('not_ready', `the cluster did not acknowledge the commit in time (${message}); it may have been stored: retry with the same Idempotency-Key to find out`);
  }
  return new GatehouseError('not_ready', `the cluster refused the commit (${message}); nothing was written`);
}

/** About how many bytes a write set takes in a message: its values, and a little per write. */
function writtenBytes(ops: WriteOp[]): number {
  let bytes = 0;
  for (const op of ops) bytes += 64 + (op.length === 3 ? op[2].byteLength : 0);
  return bytes;
}

/** Thrown to roll back the transaction a batch was worked out in. */
const CAPTURED = Symbol('captured');

interface PendingCommit {
  apply: () => unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  /** `afterCommit` callbacks registered by this transaction. */
  after: Array<() => void>;
}

/**
 * A stored value that many requests of one batch update in turn: the event log's head, the audit
 * chain's tail, a tally. Inside a write transaction of `Store.commit` it is read from the store
 * the first time it is asked for and written back once, as it then stands, just before the
 * transaction commits: one read and one write per batch instead of one of each per update (each
 * costs a decode or an encode and a write instruction). Outside one it reads and writes through.
 */
export interface TransactionValue<T> {
  get(): T;
  set(value: T): void;
}

interface HeldValue {
  value: unknown;
  dirty: boolean;
}

/** The transaction values a write transaction holds (see `TransactionValue`). */
type HeldValues = Map<StoredValue<unknown>, HeldValue>;

class StoredValue<T> implements TransactionValue<T> {
  constructor(
    private readonly held: () => HeldValues | null,
    private readonly read: () => T,
    readonly write: (value: T) => void,
  ) {}

  get(): T {
    const values = this.held();
    if (!values) return this.read();
    let entry = values.get(this as StoredValue<unknown>);
    if (!entry) values.set(this as StoredValue<unknown>, (entry = { value: this.read(), dirty: false }));
    return entry.value as T;
  }

  set(value: T): void {
    const values = this.held();
    if (!values) return this.write(value);
    values.set(this as StoredValue<unknown>, { value, dirty: true });
  }
}

/** A copy of what a transaction holds, to go back to when a nested one rolls back. */
function copyHeld(values: HeldValues): HeldValues {
  const copy: HeldValues = new Map();
  for (const [value, entry] of values) copy.set(value, { value: entry.value, dirty: entry.dirty });
  return copy;
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
  /** How long a commit waits for others to join its transaction (`StoreOptions.commitWindowMs`). */
  readonly commitWindowMs: number;
  private readonly databases = new Map<string, Database<any, any>>();
  /** Callbacks registered by the transaction currently being applied (see `afterCommit`). */
  private committing: Array<() => void> | null = null;
  /** The transaction values of the write transaction under way (see `transactionValue`). */
  private held: HeldValues | null = null;
  /** Transactions waiting for the end of this event-loop turn (see `commit`). */
  private queued: PendingCommit[] = [];
  private batchScheduled = false;
  /** In `flush` durability: a batch is being committed and flushed; the next one waits for it. */
  private batchInFlight = false;
  private readonly syncTimer: NodeJS.Timeout | null;
  private closed = false;
  /** In cluster mode: where commits are published, the writes being captured, and each database's own writers. */
  private replication: CommitReplication | null = null;
  private capture: Captured | null = null;
  private readonly writers = new Map<string, { put(key: Key, value: unknown): unknown; remove(key: Key): unknown }>();
  private appliedSeq = 0;
  private node: string | null = null;
  /** The data directory is a cluster instance's copy: only that instance, in the cluster, may write to it. */
  private clusterCopy = false;
  private readonly replicatedListeners: Array<(writes: readonly CommittedWrite[], node: string | null) => void> = [];
  /** `--threads` mode: the other threads, the last entry of the commit log learned here, what this transaction wrote that is logged. */
  private threads: ThreadCommits | null = null;
  private learnedSeq = 0;
  private loggedSeq = 0;
  private touched: Array<[string, Key]> | null = null;
  /** `--threads` mode: the databases whose writes the threads log for each other (`joinThreads`). */
  private readonly learnedDatabases = new Set<string>();

  private constructor(
    root: RootDatabase,
    path: string,
    durability: 'commit' | 'flush',
    syncIntervalMs: number,
    commitWindowMs: number,
    private readonly writemap: boolean,
  ) {
    this.root = root;
    this.path = path;
    this.durability = durability;
    this.commitWindowMs = commitWindowMs;
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
    // A generous initial map spares the writers the pause of regrowing it early. A write-mapped
    // file is as long as its map (sparse: the disk holds what was written), so it starts at a
    // size tools still read whole, and lmdb-js grows it as it fills.
    const writemap = durability === 'commit' && options.writemap === true;
    const mapSize = writemap ? 64 * 1024 ** 2 : 2 * 1024 ** 3;
    const root = open({ path, maxDbs: 32, mapSize, noSync: durability === 'commit', useWritemap: writemap });
    const store = new Store(root, path, durability, options.syncIntervalMs ?? 1000, options.commitWindowMs ?? 0, writemap);
    store.clusterCopy = store.database('meta').get(STREAM_KEY) !== undefined;
    return store;
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
      // mapsAsObjects: a value stored as the plain msgpack a cluster commit carries (see
      // `captureWrites`) reads back as the object it was, as records do.
      db = this.root.openDB<V, K>({ name, sharedStructuresKey: SHARED_STRUCTURES, mapsAsObjects: true } as never);
      this.databases.set(name, db);
      if (this.replication) this.captureWrites(name, db);
      if (this.learnedDatabases.has(name)) this.recordLearnedWrites(name);
    }
    return db as Database<V, K>;
  }

  /**
   * Cluster mode: from now on every commit is published to the cluster before it is applied
   * here, and the commits of other instances are applied through `applyReplicated`. Call before
   * anything is committed.
   */
  joinCluster(replication: CommitReplication, stream: string, node: string): void {
    // A batch is worked out in a nested transaction, which a write-mapped environment refuses.
    if (this.writemap) throw new Error('a cluster instance opens its store without writemap');
    const meta = this.database<unknown, string>('meta');
    const joined = meta.get(STREAM_KEY);
    if (joined === undefined && this.holdsData()) {
      throw new Error(`${this.path} holds data written outside cluster mode; a cluster instance starts from an empty data directory (docs/cluster.md)`);
    }
    if (joined !== undefined && joined !== stream) {
      throw new Error(`${this.path} is a copy of the cluster stream ${String(joined)}, not of ${stream} (recreated since?); start this instance from an empty data directory`);
    }
    if (joined === undefined) meta.putSync(STREAM_KEY, stream);
    this.replication = replication;
    this.node = node;
    this.appliedSeq = (meta.get(APPLIED_KEY) as number | undefined) ?? 0;
    for (const [name, db] of this.databases) this.captureWrites(name, db);
  }

  /**
   * `--threads` mode: from now on each write transaction first learns the commits other threads
   * made since the last (in their order, through the `onReplicated` listeners), and logs what it
   * writes to `logged`, the databases whose writes the threads learn; each commit is announced to
   * the threads that want to hear (`followThreads`). Call before anything is committed and before
   * the listeners build what they hold from the store, in the same turn, so they start exactly
   * where the log does.
   */
  joinThreads(threads: ThreadCommits, logged: readonly string[]): void {
    if (this.replication) throw new Error('threads and cluster mode do not combine');
    this.threads = threads;
    for (const key of this.database<ThreadLogEntry, number>(THREAD_LOG).getKeys({ reverse: true, limit: 1 })) this.learnedSeq = key;
    threads.learned(this.learnedSeq);
    for (const name of logged) {
      this.learnedDatabases.add(name);
      this.recordLearnedWrites(name);
    }
    threads.onAnnounced(() => {
      this.catchUpThreads();
      for (const listener of this.replicatedListeners) listener([], null);
    });
  }

  /**
   * `--threads` mode: learns the other threads' commits made so far, now rather than in this
   * thread's next write transaction or when woken (a reader of what they hold in process memory
   * calls it first). Without threads, nothing to do.
   */
  catchUpThreads(): void {
    if (!this.threads || this.closed) return;
    this.refreshReads();
    this.learnThreads();
  }

  /**
   * `--threads` mode: while on, this thread is woken by each other thread's commit, its
   * `onReplicated` listeners called at once (a stream with subscribers publishes what the other
   * threads commit as it happens). Off, it learns them at its next write or `catchUpThreads`.
   */
  followThreads(on: boolean): void {
    this.threads?.want(on);
  }

  /** `--threads` mode: wakes thread 0, which does the work done once per process (webhook deliveries, the proxy gateway's sends). */
  wakeMainThread(): void {
    this.threads?.wake(0);
  }

  /** Makes the next read outside a transaction see every commit made so far, other threads' and processes' too. */
  refreshReads(): void {
    (this.root as RootDatabase & { resetReadTxn(): void }).resetReadTxn();
  }

  /** Logs the keys written to `name` while a write transaction runs (`joinThreads`). */
  private recordLearnedWrites(name: string): void {
    const db = this.databases.get(name);
    if (!db) return;
    const put = db.put.bind(db);
    const remove = db.remove.bind(db);
    // lmdb-js's own records (its shared structures, under a symbol) are not learned.
    const touch = (key: Key) => typeof key !== 'symbol' && this.touched?.push([name, key]);
    Object.assign(db, {
      put: (key: Key, ...rest: unknown[]) => {
        touch(key);
        return (put as (...args: unknown[]) => unknown)(key, ...rest);
      },
      remove: (key: Key, ...rest: unknown[]) => {
        touch(key);
        return (remove as (...args: unknown[]) => unknown)(key, ...rest);
      },
    });
  }

  /** Learns the entries of the commit log after the last learned here, in order. */
  private learnThreads(): void {
    const threads = this.threads!;
    const log = this.database<ThreadLogEntry, number>(THREAD_LOG);
    for (let entry = log.get(this.learnedSeq + 1); entry; entry = log.get(this.learnedSeq + 1)) {
      this.learnedSeq++;
      if (entry.node === threads.node) continue;
      const writes = entry.writes.map(([db, key]): CommittedWrite => ({ db, key, value: () => this.database(db).get(key) }));
      for (const listener of this.replicatedListeners) listener(writes, entry.node);
    }
    threads.learned(this.learnedSeq);
  }

  /**
   * Deletes the entries of the commit log thread 0 has learned, but the last, which numbers the
   * next; resolves to how many. The other threads read the log only to number their entries.
   */
  async pruneThreadLog(): Promise<number> {
    if (!this.threads) return 0;
    const through = this.threads.learnedByMain();
    const log = this.database<ThreadLogEntry, number>(THREAD_LOG);
    const keys = [...log.getKeys({ end: through + 1 })];
    for (const last of log.getKeys({ reverse: true, limit: 1 })) if (keys.at(-1) === last) keys.pop();
    if (keys.length) await this.commit(() => keys.forEach((key) => log.remove(key)));
    return keys.length;
  }

  /** Whether anything but LMDB's own bookkeeping is stored. */
  private holdsData(): boolean {
    for (const name of ['audit', 'decisions', 'keys', 'events']) {
      for (const _ of this.database(name).getKeys({ limit: 1 })) return true;
    }
    return false;
  }

  /**
   * In cluster mode, this instance's node id: work that only the instance doing it can finish
   * (a held request being sent, a tool being called) is marked with it, so that another instance
   * starting up does not take it for work a stopped process left unfinished.
   */
  get nodeId(): string | null {
    return this.node;
  }

  /** The last commit of the cluster's stream applied here (0 outside cluster mode). */
  get applied(): number {
    return this.appliedSeq;
  }

  /**
   * Every module writes through lmdb-js's `put` and `remove`; in cluster mode the store takes
   * over those two on each database, so what a commit writes is also captured as its write set
   * and the modules stay unaware of the cluster. A write to a replicated database outside a
   * commit could never reach the other instances, so it is refused.
   *
   * A captured value is encoded once, as the write set carries it, and stored as those bytes:
   * here while the batch is worked out, then by every instance as the commit is applied, with
   * neither a decode nor a second encoding (they cost a third of a clustered decision's CPU).
   */
  private captureWrites(name: string, db: Database<any, any>): void {
    if (this.writers.has(name)) return;
    const put = db.put.bind(db);
    const remove = db.remove.bind(db);
    this.writers.set(name, { put, remove });
    const local = LOCAL_ONLY.has(name);
    const target = (key: Key): WriteOp[] | null => {
      // lmdb-js's own records (its shared structures, under a symbol) are each instance's own.
      if (typeof key === 'symbol') return null;
      if (this.capture) return local ? this.capture.local : this.capture.replicated;
      if (local) return null;
      throw new Error(`a write to "${name}" outside store.commit cannot be replicated to the cluster`);
    };
    Object.assign(db, {
      put: (key: Key, value: unknown, ...rest: unknown[]) => {
        const ops = target(key);
        if (!ops) return (put as (...args: unknown[]) => unknown)(key, value, ...rest);
        const bytes = encodeValue(value);
        ops.push([name, key, bytes]);
        return (put as (...args: unknown[]) => unknown)(key, asBinary(bytes), ...rest);
      },
      remove: (key: Key, ...rest: unknown[]) => {
        target(key)?.push([name, key]);
        return (remove as (...args: unknown[]) => unknown)(key, ...rest);
      },
    });
  }

  /**
   * Applies a commit of the cluster's stream that this instance did not make (or has not yet
   * applied), in one transaction with the sequence it reached. Commits are applied in order;
   * one already applied is skipped. `node` is the instance that made it, null when unknown.
   */
  applyReplicated(seq: number, ops: WriteOp[], node: string | null = null): void {
    if (seq <= this.appliedSeq) return;
    if (seq !== this.appliedSeq + 1) throw new Error(`commit ${seq} arrived after ${this.appliedSeq}: the stream skipped commits`);
    this.root.transactionSync(() => this.writeOps(seq, ops), COMMIT_NOW);
    this.appliedSeq = seq;
    const writes = ops.map(([db, key, bytes]): CommittedWrite => ({ db, key, value: () => (bytes ? decodeValue(bytes) : undefined) }));
    for (const listener of this.replicatedListeners) listener(writes, node);
  }

  /**
   * Calls `listener` with its writes, and the instance that made it, after each commit applied
   * from the stream: another instance's, or this one's when the stream handed it over before
   * its publisher heard back. In `--threads` mode, after each commit another thread made, with
   * its writes to the databases the threads log (`joinThreads`), and once more, with none, each
   * time another thread wakes this one.
   */
  onReplicated(listener: (writes: readonly CommittedWrite[], node: string | null) => void): void {
    this.replicatedListeners.push(listener);
  }

  private writeOps(seq: number, ops: WriteOp[]): void {
    for (const op of ops) {
      const writer = this.writers.get(op[0]) ?? (this.database(op[0]), this.writers.get(op[0])!);
      if (op.length === 3) writer.put(op[1], asBinary(op[2]));
      else writer.remove(op[1]);
    }
    if (seq > 0) this.writers.get('meta')!.put(APPLIED_KEY, seq);
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
    if (this.clusterCopy && !this.replication) {
      return Promise.reject(new Error(`${this.path} is a cluster instance's copy of the cluster's state: write through the cluster (the API of a running instance), not to the copy`));
    }
    return new Promise<T>((resolve, reject) => {
      this.queued.push({ apply, resolve: resolve as (value: unknown) => void, reject, after: [] });
      this.scheduleBatch();
    });
  }

  private scheduleBatch(): void {
    if (this.batchScheduled || this.batchInFlight || this.queued.length === 0) return;
    this.batchScheduled = true;
    const commitBatch = () => {
      this.batchScheduled = false;
      if (this.replication) void this.commitBatchReplicated(this.replication);
      else if (this.durability === 'commit') this.commitBatchNow();
      else void this.commitBatchFlushed();
    };
    if (this.commitWindowMs > 0 && (this.durability === 'commit' || this.replication)) setTimeout(commitBatch, this.commitWindowMs);
    else setImmediate(commitBatch);
  }

  private commitBatchNow(): void {
    // What the other threads committed is learned (as far as this turn's reads see) before taking
    // the write lock, which they wait on; what came since, inside it.
    if (this.threads) this.learnThreads();
    const batch = this.takeBatch();
    let outcomes: Outcome[];
    try {
      const values = this.root.transactionSync(() => this.holdingValues(() => batch.map((pending) => this.applyOne(pending))), COMMIT_NOW);
      this.committedForThreads();
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
      const outcomes = await this.root.transaction(() => this.holdingValues(() => batch.map((pending) => this.applyIsolated(pending))));
      this.committedForThreads();
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
   * Cluster mode: the batch is worked out in a transaction that is rolled back, capturing what
   * it writes; the write set is published to follow the last commit applied here, and applied
   * here once the cluster has it. When another instance's commit came first, this instance
   * applies it and works the batch out again on the newer state, so every check (a revision, the
   * audit chain's tail) is made against what the cluster holds. When the cluster cannot take
   * the commit, every request in the batch is refused with `not_ready` and nothing is written.
   */
  private async commitBatchReplicated(replication: CommitReplication): Promise<void> {
    const batch = this.takeBatch();
    this.batchInFlight = true;
    const deadline = Date.now() + CONFLICT_DEADLINE_MS;
    try {
      for (let attempt = 0; ; attempt++) {
        const base = this.appliedSeq;
        const { outcomes, captured } = this.captureBatch(batch, replication.maxBytes);
        // What did not fit in one message goes first in the next batch.
        if (outcomes.length < batch.length) this.queued.unshift(...batch.splice(outcomes.length));
        let seq = 0;
        if (captured.replicated.length) {
          try {
            seq = await replication.publish(captured.replicated, base);
          } catch (error) {
            if (error instanceof CommitConflict && attempt < MAX_CONFLICT_RETRIES && Date.now() < deadline) {
              // Applying the commits that came first, straight from the sequence the stream named,
              // costs no extra round trip: an instance that lost the race is not left behind again.
              await replication.catchUp(error.lastSeq).catch(() => {});
              // What arrived meanwhile goes in the same attempt: under contention fewer, larger
              // commits race for the stream, and the requests that waited are not raced again.
              batch.push(...this.takeBatch());
              continue;
            }
            this.rolledBack(batch);
            for (const pending of batch) pending.reject(unavailable(error));
            return;
          }
        }
        try {
          this.applyOwn(seq, captured);
        } catch (error) {
          // Published but not applied here (the map is full, say): the reader applies it, or the
          // instance stops on it; the callers cannot be told it succeeded.
          this.rolledBack(batch);
          for (const pending of batch) pending.reject(error);
          return;
        }
        settle(batch, outcomes);
        return;
      }
    } finally {
      this.batchInFlight = false;
      this.scheduleBatch();
    }
  }

  /**
   * Runs a batch in a transaction that is then rolled back: each outcome, and what the batch
   * wrote. It stops once the writes reach `maxBytes` (one message of the cluster), so `outcomes`
   * may cover only the first requests of the batch (always at least one).
   */
  private captureBatch(batch: PendingCommit[], maxBytes: number): { outcomes: Outcome[]; captured: Captured } {
    const captured: Captured = { replicated: [], local: [] };
    const outcomes: Outcome[] = [];
    let bytes = 0;
    try {
      this.root.transactionSync(() => {
        this.held = new Map();
        for (const pending of batch) {
          pending.after.length = 0;
          const before = copyHeld(this.held);
          this.capture = { replicated: [], local: [] };
          const outcome = this.applyIsolated(pending, undefined, before);
          const size = outcome.ok ? writtenBytes(this.capture.replicated) : 0;
          if (outcomes.length > 0 && bytes + size > maxBytes) {
            this.held = before;
            break;
          }
          bytes += size;
          if (outcome.ok) {
            captured.replicated.push(...this.capture.replicated);
            captured.local.push(...this.capture.local);
          }
          outcomes.push(outcome);
        }
        // The values the batch changed are written once, last, as part of its write set.
        this.capture = captured;
        this.writeHeld();
        throw CAPTURED;
      });
    } catch (error) {
      if (error !== CAPTURED) throw error;
    } finally {
      this.capture = null;
      this.held = null;
      this.forgetUnsavedStructures();
    }
    return { outcomes, captured };
  }

  /** Applies this instance's own commit `seq` (0: nothing to replicate) and its local writes. */
  private applyOwn(seq: number, captured: Captured): void {
    // The stream may have handed the commit to this instance's reader first.
    const ops = seq > this.appliedSeq ? captured.replicated.concat(captured.local) : captured.local;
    if (ops.length === 0 && seq <= this.appliedSeq) return;
    if (seq > this.appliedSeq + 1) throw new Error(`commit ${seq} was published after ${this.appliedSeq}, which this instance has not applied`);
    this.root.transactionSync(() => this.writeOps(seq > this.appliedSeq ? seq : 0, ops), COMMIT_NOW);
    if (seq > this.appliedSeq) this.appliedSeq = seq;
  }

  /**
   * One `apply` in a transaction of its own (a child one, without `flags`, when a transaction is
   * open): its outcome, its writes rolled back if it threw.
   */
  private applyIsolated(pending: PendingCommit, flags?: number, before: HeldValues | null = this.held && copyHeld(this.held)): Outcome {
    // Nested in a transaction that holds values (`before`, a copy of them): what this one changes is undone with it.
    try {
      let value: unknown;
      // Nothing is returned to lmdb-js: a thenable result (an lmdb-js put's promise, say) would
      // make it finish the transaction asynchronously.
      this.root.transactionSync(() => {
        value = before ? this.applyOne(pending) : this.holdingValues(() => this.applyOne(pending));
      }, flags);
      if (!before) this.committedForThreads();
      return { ok: true, value };
    } catch (error) {
      if (before) this.held = before;
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

  /**
   * A value read once and written once per write transaction (see `TransactionValue`): `read`
   * reads it as stored, `write` stores it. Values must be immutable: `set` a new one.
   */
  transactionValue<T>(read: () => T, write: (value: T) => void): TransactionValue<T> {
    return new StoredValue(() => this.held, read, write);
  }

  /**
   * Runs `fn` as a write transaction's whole work, holding its transaction values and writing
   * the changed ones at the end, inside the transaction.
   */
  private holdingValues<T>(fn: () => T): T {
    this.held = new Map();
    this.loggedSeq = 0;
    if (this.threads) {
      this.learnThreads();
      // Thread 0 logs nothing (`joinThreads`): nothing to collect.
      if (this.learnedDatabases.size > 0) this.touched = [];
    }
    try {
      const result = fn();
      this.writeHeld();
      if (this.touched?.length) this.logForThreads(this.touched);
      return result;
    } finally {
      this.held = null;
      this.touched = null;
    }
  }

  /**
   * Logs what this transaction wrote that other threads learn, as the log's next entry: after its
   * last, read inside the transaction (a thread that has not learned the log lately, its entries
   * pruned, numbers its own after every other thread's all the same).
   */
  private logForThreads(writes: Array<[string, Key]>): void {
    const log = this.database<ThreadLogEntry, number>(THREAD_LOG);
    let last = 0;
    for (const key of log.getKeys({ reverse: true, limit: 1 })) last = key;
    this.loggedSeq = last + 1;
    log.put(this.loggedSeq, { node: this.threads!.node, writes });
  }

  /** After a write transaction committed: its log entry is learned here, and the other threads are told. */
  private committedForThreads(): void {
    const threads = this.threads;
    if (!threads) return;
    if (this.loggedSeq > this.learnedSeq) {
      this.learnedSeq = this.loggedSeq;
      threads.learned(this.learnedSeq);
    }
    threads.announce();
  }

  private writeHeld(): void {
    for (const [value, entry] of this.held!) if (entry.dirty) value.write(entry.value);
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
