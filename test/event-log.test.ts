import t from 'tap';
import { AuditLog, operationDraft } from '../core/audit-log.ts';
import { auditEvent } from '../core/events/audit-events.ts';
import { EventLog } from '../core/events/event-log.ts';
import { covers, topicPaths, topicScope } from '../core/events/topics.ts';
import { Store } from '../core/store.ts';
import { retryDelay } from '../core/webhooks/retry-schedule.ts';
import { tempDir } from './helpers/gatehouse.ts';

// The event log's numbering and retention, topic rules and the retry schedule, each on its own
// (the address guard has test/ssrf-guard.test.ts).

t.test('cursors increase by one and survive pruning', async (t) => {
  const store = Store.open({ dataDir: tempDir(t) });
  t.teardown(() => store.close());
  const log = new EventLog(store, new AuditLog(store));
  const append = (n: number) =>
    store.commit(() => {
      for (let i = 0; i < n; i++) log.appendInTransaction({ kind: 'audit.appended', topic: 'audit', env: 'sandbox', data: { i } });
    });
  await append(10);
  t.equal(log.head(), 10);
  t.same(log.after(7, 10).map((e) => e.cursor), [8, 9, 10]);
  t.equal(await log.prune({ maxAgeMs: 3_600_000, maxCount: 4 }, 3), 3, 'by count, but never above the floor');
  t.equal(log.prunedThrough(), 3);
  t.equal(await log.prune({ maxAgeMs: 3_600_000, maxCount: 4 }, Number.MAX_SAFE_INTEGER), 3, 'then down to the count');
  t.same(log.after(0, 100).map((e) => e.cursor), [7, 8, 9, 10]);
  t.equal(await log.prune({ maxAgeMs: 0, maxCount: 100 }, Number.MAX_SAFE_INTEGER, Date.now() + 1000), 4, 'by age');
  t.equal(log.head(), 10, 'an emptied log keeps its place');
  await append(1);
  t.same(log.after(0, 10).map((e) => e.cursor), [11], 'and numbering goes on');
});

t.test('an audit.appended event stores a reference to its entry and reads back the entry', async (t) => {
  const store = Store.open({ dataDir: tempDir(t) });
  t.teardown(() => store.close());
  const audit = new AuditLog(store);
  const log = new EventLog(store, audit);
  const entry = await store.commit(() => {
    const appended = audit.appendInTransaction({ ...operationDraft('SYSTEM', 'test', 'key_1', 200), env: 'sandbox' });
    log.appendInTransaction(auditEvent(appended)!);
    return appended;
  });
  const stored = store.database<{ data?: unknown; json?: string; auditSeq?: number }, number>('events').get(1)!;
  t.equal(stored.data, undefined, 'the stored event holds no copy of the entry');
  t.equal(stored.json, undefined, 'not even as text');
  t.equal(stored.auditSeq, entry.seq, 'only its number');
  t.same(JSON.parse(log.after(0, 10)[0]!.dataJson), JSON.parse(JSON.stringify(entry)), 'readers of the log see the entry');
  t.same(log.ofTopic('sandbox', 'audit'), [], 'the audit topic is not indexed (the audit log has its own trace index)');
});

t.test('event data is stored as JSON text once, given or serialised, and older records still read', async (t) => {
  const store = Store.open({ dataDir: tempDir(t) });
  t.teardown(() => store.close());
  const log = new EventLog(store, new AuditLog(store));
  const text = '{"id":"dec_1","title":"as the reply wrote it"}';
  await store.commit(() => {
    log.appendInTransaction({ kind: 'decision.created', topic: 'decisions/dec_1', env: 'sandbox', data: null, dataJson: text });
    log.appendInTransaction({ kind: 'key.created', topic: 'keys/key_1', env: 'sandbox', data: { id: 'key_1', scopes: ['a'] } });
  });
  const events = store.database<{ json?: string; data?: unknown }, number>('events');
  t.equal(events.get(1)!.json, text, 'the given text is what is stored');
  t.equal(events.get(2)!.json, '{"id":"key_1","scopes":["a"]}', 'a value is serialised once, at append');
  // An event as stored before the text was kept: its data a value.
  await store.commit(() => {
    events.put(3, { cursor: 3, id: 'evt_old', time: new Date().toISOString(), kind: 'key.revoked', topic: 'keys/key_1', env: 'sandbox', data: { id: 'key_1' } } as never);
    store.database<number, string>('meta').put('events-head', 3);
  });
  t.same(log.after(0, 10).map((e) => e.dataJson), [text, '{"id":"key_1","scopes":["a"]}', '{"id":"key_1"}']);
  t.same(log.ofTopic('sandbox', 'decisions/dec_1').map((e) => e.id.slice(0, 4)), ['evt_'], 'decision topics are indexed');
});

t.test('topics', async (t) => {
  t.same(topicPaths('decisions/dec_1'), ['decisions', 'decisions/dec_1']);
  t.ok(covers('decisions', 'decisions/dec_1'));
  t.notOk(covers('decisions/dec_1', 'decisions/dec_12'), 'an id is not a prefix of another');
  t.notOk(covers('decision', 'decisions/dec_1'));
  t.equal(topicScope('decisions/dec_1'), 'decisions:read');
  t.equal(topicScope('audit'), 'admin');
  t.equal(topicScope('decisions/a/b'), null, 'at most two segments');
  t.equal(topicScope('secrets'), null);
});

t.test('retries back off with jitter and end', async (t) => {
  const schedule = [1000, 60_000];
  t.equal(retryDelay(schedule, 1, () => 0.5), 1000);
  t.equal(retryDelay(schedule, 2, () => 0), 54_000, '10% earlier at the least');
  t.equal(retryDelay(schedule, 2, () => 1), 66_000, '10% later at the most');
  t.equal(retryDelay(schedule, 3), null, 'given up after the schedule');
});

t.test('announcements made together tell the readers once, after the caller goes on', async (t) => {
  const store = Store.open({ dataDir: tempDir(t) });
  t.teardown(() => store.close());
  const log = new EventLog(store, new AuditLog(store));
  let told = 0;
  log.onCommitted(() => told++);
  for (let i = 0; i < 10; i++) log.announce();
  t.equal(told, 0, 'not while the announcing code runs');
  await Promise.resolve();
  t.equal(told, 1, 'once for the ten, by the next microtask');
  log.announce();
  await Promise.resolve();
  t.equal(told, 2, 'a later announcement tells them again');
});

t.test('a reader that throws on an announcement does not stop the others, nor the process', async (t) => {
  const store = Store.open({ dataDir: tempDir(t) });
  t.teardown(() => store.close());
  const log = new EventLog(store, new AuditLog(store));
  let told = 0;
  log.onCommitted(() => {
    throw new Error('a reader failed');
  });
  log.onCommitted(() => told++);
  log.announce();
  await Promise.resolve();
  t.equal(told, 1, 'the next reader is still told');
});
