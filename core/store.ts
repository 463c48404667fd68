import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Database, type Key, type RootDatabase } from 'lmdb';

/**
 * The embedded LMDB environment under the data directory. Every named database lives in one
 * environment so a decision, its idempotency record and its audit entry commit in one
 * transaction.
 */
export interface StoreOptions {
  dataDir: string;
  /**
   * `commit` (default) answers once the transaction is committed: it survives the process being
   * killed. `flush` also waits for the OS to report the pages on disk: it survives power loss.
   */
  durability?: 'commit' | 'flush';
}

export class Store {
  readonly root: RootDatabase;
  readonly path: string;
  private readonly durability: 'commit' | 'flush';
  private readonly databases = new Map<string, Database<any, any>>();
  private closed = false;

  private constructor(root: RootDatabase, path: string, durability: 'commit' | 'flush') {
    this.root = root;
    this.path = path;
    this.durability = durability;
  }

  static open(options: StoreOptions): Store {
    mkdirSync(options.dataDir, { recursive: true });
    const path = join(options.dataDir, 'gatehouse.mdb');
    // A generous initial map (sparse on disk) spares the writers the pause of regrowing it early.
    const root = open({ path, maxDbs: 32, mapSize: 2 * 1024 ** 3 });
    return new Store(root, path, options.durability ?? 'commit');
  }

  /** A named database, opened once and shared by every module that asks for it. */
  database<V, K extends Key = Key>(name: string): Database<V, K> {
    let db = this.databases.get(name);
    if (!db) {
      db = this.root.openDB<V, K>({ name });
      this.databases.set(name, db);
    }
    return db as Database<V, K>;
  }

  /**
   * Runs `apply` inside one write transaction and resolves once it is committed. Transactions
   * queued in the same event turn share one commit, which is how concurrent requests amortise
   * the cost of a durable write.
   */
  async commit<T>(apply: () => T): Promise<T> {
    const result = await this.root.transaction(apply);
    if (this.durability === 'flush') await this.root.flushed;
    return result;
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.root.committed;
    await this.root.close();
  }
}
