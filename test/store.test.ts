import t from 'tap';
import { settings } from '../cli/commands/serve.ts';
import { Store } from '../core/store.ts';
import { tempDir } from './helpers/gatehouse.ts';

/**
 * The store's group commit: concurrent transactions share one LMDB commit, yet each one succeeds
 * or fails on its own.
 */
const MODES = [
  { name: 'commit', options: { durability: 'commit' } },
  { name: 'commit, write-mapped', options: { durability: 'commit', writemap: true } },
  { name: 'flush', options: { durability: 'flush' } },
] as const;

for (const { name: durability, options } of MODES) {
  t.test(`${durability}: a failing transaction in a shared batch rolls back only its own writes`, async (t) => {
    const store = Store.open({ dataDir: tempDir(t), ...options });
    t.teardown(() => store.close());
    const db = store.database<string, string>('items');
    const ran: string[] = [];
    const results = await Promise.allSettled([
      store.commit(() => {
        db.put('a', 'first');
        store.afterCommit(() => ran.push('a'));
        return 'a done';
      }),
      store.commit(() => {
        db.put('b', 'half-written');
        store.afterCommit(() => ran.push('b'));
        throw new Error('refused halfway');
      }),
      store.commit(() => {
        db.put('c', 'third');
        store.afterCommit(() => ran.push('c'));
        return 'c done';
      }),
    ]);
    t.same(
      results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
      ['a done', 'refused halfway', 'c done'],
    );
    t.equal(db.get('a'), 'first');
    t.equal(db.get('b'), undefined, 'the failed transaction left nothing behind');
    t.equal(db.get('c'), 'third');
    t.same(ran, ['a', 'c'], 'after-commit work runs for committed transactions only');
  });

  t.test(`${durability}: a transaction value is read and written once per batch, and a failing commit's change to it is undone`, async (t) => {
    const store = Store.open({ dataDir: tempDir(t), ...options });
    t.teardown(() => store.close());
    const db = store.database<number, string>('counters');
    let reads = 0;
    let writes = 0;
    const counter = store.transactionValue(
      () => (reads++, db.get('n') ?? 0),
      (n) => (writes++, db.put('n', n)),
    );
    const bump = () => store.commit(() => {
      const n = counter.get() + 1;
      counter.set(n);
      return n;
    });
    const results = await Promise.allSettled([
      bump(),
      bump(),
      store.commit(() => {
        counter.set(counter.get() + 100);
        throw new Error('refused after changing the counter');
      }),
      bump(),
    ]);
    t.same(results.map((r) => (r.status === 'fulfilled' ? r.value : 'refused')), [1, 2, 'refused', 3], 'each sees the others\' changes, never the refused one\'s');
    t.equal(db.get('n'), 3, 'the stored value is the last one set by a commit that succeeded');
    // `commit` runs the batch again without sharing, one transaction per commit (the failed batch read once); `flush` nests one per commit in one.
    t.ok(writes <= 3 && reads <= 5, `at most one read and one write per transaction (${reads} reads, ${writes} writes)`);
    t.equal(counter.get(), 3, 'outside a transaction it reads through');
    reads = writes = 0;
    await Promise.all(Array.from({ length: 20 }, bump));
    t.equal(db.get('n'), 23);
    t.same([reads, writes], [1, 1], 'twenty commits in one batch: one read, one write');
  });

  t.test(`${durability}: close commits what was queued, then refuses new work; a reopened store has it`, async (t) => {
    const dataDir = tempDir(t);
    const store = Store.open({ dataDir, ...options });
    const db = store.database<number, number>('counts');
    const pending = Array.from({ length: 50 }, (_, i) => store.commit(() => db.put(i, i * i)));
    await store.close();
    await Promise.all(pending);
    await t.rejects(store.commit(() => db.put(99, 0)), /closed/);
    const reopened = Store.open({ dataDir, ...options });
    t.teardown(() => reopened.close());
    const again = reopened.database<number, number>('counts');
    t.equal(again.get(49), 49 * 49);
    t.equal([...again.getKeys()].length, 50);
  });

  t.test(`${durability}: a record shape first seen in a rolled-back transaction still reads back after a restart`, async (t) => {
    const dataDir = tempDir(t);
    const store = Store.open({ dataDir, ...options });
    const db = store.database<Record<string, unknown>, string>('shapes');
    await store.commit(() => db.put('old', { kind: 'old', n: 1 }));
    // The new shape's key list is saved inside the transaction that then fails.
    await t.rejects(
      store.commit(() => {
        db.put('lost', { kind: 'new', extra: 'field', n: 2 });
        throw new Error('refused after encoding');
      }),
      /refused/,
    );
    await store.commit(() => db.put('kept', { kind: 'new', extra: 'field', n: 3 }));
    t.same(db.get('kept'), { kind: 'new', extra: 'field', n: 3 });
    await store.close();

    const reopened = Store.open({ dataDir, ...options });
    t.teardown(() => reopened.close());
    const again = reopened.database<Record<string, unknown>, string>('shapes');
    t.same(again.get('kept'), { kind: 'new', extra: 'field', n: 3 });
    t.same(again.get('old'), { kind: 'old', n: 1 });
    t.equal(again.get('lost'), undefined);
    t.same([...again.getKeys()], ['kept', 'old'], 'the shared key lists are not listed as a record');
  });
}

t.test('a write-mapped store cannot join a cluster, whose batches need nested transactions', async (t) => {
  const store = Store.open({ dataDir: tempDir(t), writemap: true });
  t.teardown(() => store.close());
  const replication = { publish: async () => 1, maxBytes: 1 << 20, catchUp: async () => {} };
  t.throws(() => store.joinCluster(replication, 'stream', 'node'), /without writemap/);
});

t.test('afterCommit outside a transaction is a programming error', async (t) => {
  const store = Store.open({ dataDir: tempDir(t) });
  t.teardown(() => store.close());
  t.throws(() => store.afterCommit(() => {}), /only valid inside store.commit/);
});

t.test('a commit window lets commits made within it share one transaction', async (t) => {
  const lastTxn = (store: Store) => (store.root.getStats() as { lastTxnId: number }).lastTxnId;
  const twoCommits = async (store: Store) => {
    const db = store.database<number, string>('window');
    const before = lastTxn(store);
    const first = store.commit(() => void db.put('a', 1));
    // The second arrives 5 ms later: after the end of the first's event-loop turn, within a 50 ms window.
    const second = new Promise<void>((resolve) => setTimeout(() => resolve(store.commit(() => void db.put('b', 2))), 5));
    await Promise.all([first, second]);
    t.same([db.get('a'), db.get('b')], [1, 2], 'both are stored');
    return lastTxn(store) - before;
  };
  const alone = Store.open({ dataDir: tempDir(t) });
  t.teardown(() => alone.close());
  t.equal(await twoCommits(alone), 2, 'without a window, each commits in its own transaction');
  const windowed = Store.open({ dataDir: tempDir(t), commitWindowMs: 50 });
  t.teardown(() => windowed.close());
  t.equal(await twoCommits(windowed), 1, 'with a 50 ms window, both commit in one');
});

t.test('gatehouse serve --commit-window and GATEHOUSE_COMMIT_WINDOW', async (t) => {
  const window = (argv: string[], env: Record<string, string> = {}) => {
    const parsed = settings(argv, env);
    return parsed === 'help' ? parsed : parsed.commitWindowMs;
  };
  t.equal(window([]), undefined, "none given: the server's default for its mode");
  t.equal(window(['--commit-window', '1']), 1);
  t.equal(window([], { GATEHOUSE_COMMIT_WINDOW: '2' }), 2);
  t.throws(() => window(['--commit-window=-1']), /--commit-window must be an integer ≥ 0/);
  t.throws(() => window([], { GATEHOUSE_COMMIT_WINDOW: 'soon' }), /--commit-window must be an integer/);
});
