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
  const stored = store.database<{ data: unknown; auditSeq?: number }, number>('events').get(1)!;
  t.equal(stored.data, null, 'the stored event holds no copy of the entry');
  t.equal(stored.auditSeq, entry.seq, 'only its number');
  t.same(log.after(0, 10)[0]!.data, entry, 'readers of the log see the entry');
  t.same(log.ofTopic('sandbox', 'audit')[0]!.data, entry, 'so do readers of a topic');
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
