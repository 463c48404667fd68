import t from 'tap';
import { Store, type CommittedWrite, type ThreadCommits } from '../core/store.ts';
import { tempDir } from './helpers/gatehouse.ts';

// The commit log the threads of `--threads` keep in LMDB (core/store.ts): two stores on one
// environment stand for a worker thread, which logs its decisions, and thread 0, which learns them.

function commitsOf(node: string, learned: number[], index: number): ThreadCommits {
  return {
    node,
    announce: () => {},
    wake: () => {},
    want: () => {},
    learned: (seq) => (learned[index] = seq),
    learnedByMain: () => learned[0]!,
    onAnnounced: () => {},
  };
}

t.test('thread 0 learns what a worker logs, in order, and pruning never makes a worker reuse a number', async (t) => {
  const dir = tempDir(t);
  const learned = [0, 0, 0];
  const main = Store.open({ dataDir: dir });
  const worker = Store.open({ dataDir: dir });
  const idle = Store.open({ dataDir: dir });
  t.teardown(async () => {
    await idle.close();
    await worker.close();
    await main.close();
  });
  main.joinThreads(commitsOf('thread-0', learned, 0), []);
  worker.joinThreads(commitsOf('thread-1', learned, 1), ['decisions']);
  idle.joinThreads(commitsOf('thread-2', learned, 2), ['decisions']);
  const seen: string[] = [];
  main.onReplicated((writes: readonly CommittedWrite[], node) => {
    for (const write of writes) seen.push(`${node} ${write.db} ${String(write.key)} ${JSON.stringify(write.value())}`);
  });

  const decisions = worker.database<{ n: number }, string>('decisions');
  const put = (key: string, n: number) => worker.commit(() => decisions.put(key, { n }));
  await put('a', 1);
  await put('b', 2);
  await worker.commit(() => worker.database('other').put('x', 1));
  main.catchUpThreads();
  t.same(seen, ['thread-1 decisions a {"n":1}', 'thread-1 decisions b {"n":2}'], 'the logged writes, in commit order, with what they stored; others are not logged');
  t.equal(learned[0], 2, 'thread 0 says how far it has learned');

  t.equal(await main.pruneThreadLog(), 1, 'what thread 0 learned is pruned, but the last entry');
  // A thread that learned nothing since it started numbers its entry after the last all the same.
  await idle.commit(() => idle.database<{ n: number }, string>('decisions').put('c', { n: 3 }));
  main.catchUpThreads();
  t.same(seen.slice(2), ['thread-2 decisions c {"n":3}'], 'an entry after pruning follows the last, and is learned');
  t.equal(await main.pruneThreadLog(), 1);
  t.equal(await main.pruneThreadLog(), 0, 'the last entry stays');
});
