import t from 'tap';
import { sweepExpired } from '../core/chunked-scan.ts';
import { IdempotencyStore } from '../core/idempotency.ts';
import { Store } from '../core/store.ts';
import { tempDir } from './helpers/gatehouse.ts';

// Expired records (Idempotency-Keys, replay markers, sessions) are swept a chunk per event-loop
// turn, on a real LMDB store: exactly the expired ones go, and other work runs meanwhile.

t.test('a sweep removes exactly the expired records, a chunk per turn', async (t) => {
  const store = Store.open({ dataDir: tempDir(t) });
  t.teardown(() => store.close());
  const db = store.database<{ expiresAt: number }, [string, number]>('sweep-test');
  await store.commit(() => {
    for (let i = 0; i < 5_000; i++) db.put(['k', i], { expiresAt: i % 3 === 0 ? 100 : 10_000 });
  });
  let turns = 0;
  const ticker = setInterval(() => turns++, 0);
  const removed = await sweepExpired(store, db, (record) => record.expiresAt <= 1_000, 400);
  clearInterval(ticker);
  t.equal(removed, 1_667, 'every third record had expired');
  const left = [...db.getKeys()].map((key) => key[1]);
  t.equal(left.length, 3_333);
  t.ok(left.every((i) => i % 3 !== 0), 'only live records are left');
  t.ok(turns > 0, `timers ran during the sweep (${turns})`);
  t.equal(await sweepExpired(store, db, (record) => record.expiresAt <= 1_000, 400), 0, 'a second sweep finds nothing');
});

t.test('Idempotency-Key records past their retention are purged; a reply within it still replays', async (t) => {
  const store = Store.open({ dataDir: tempDir(t) });
  t.teardown(() => store.close());
  const keys = new IdempotencyStore(store, 1_000);
  await store.commit(() => {
    keys.saveInTransaction(['sandbox', 'key_a', 'old'], 'f', { status: 200, headers: {}, body: '{}' }, 0);
    keys.saveInTransaction(['sandbox', 'key_a', 'new'], 'f', { status: 200, headers: {}, body: '{"new":true}' }, 5_000);
  });
  t.equal(await keys.purgeExpired(store, 5_500), 1);
  t.match(await keys.claim(['sandbox', 'key_a', 'new'], 'f', 5_500), { kind: 'replay', response: { body: '{"new":true}' } });
  t.match(await keys.claim(['sandbox', 'key_a', 'old'], 'f', 5_500), { kind: 'claimed' }, 'the purged key runs again');
});
