import t from 'tap';
import { AuditLog, type AuditDraft } from '../core/audit-log.ts';
import type { DecisionRecord } from '../core/decision.ts';
import type { Env } from '../core/env.ts';
import { DecisionStore, LIST_SCAN_LIMIT, type DecisionCounts, type DecisionSelection } from '../core/decision-store.ts';
import { Store } from '../core/store.ts';
import { tempDir } from './helpers/gatehouse.ts';

// Counts read tallies kept with the decision writes, a list page reads a bounded number of
// decisions, and the long scans (a title count, the audit chain's check) give the event loop
// turns: all against a real LMDB store, checked against counting every decision by hand.

const STATES = [
  { status: 'created', gate: 'human_approval', nextAction: 'approve' },
  { status: 'approved', gate: 'human_approval', nextAction: 'execute' },
  { status: 'created', gate: 'auto', nextAction: 'execute' },
  { status: 'executed', gate: 'auto', nextAction: 'none' },
  { status: 'rejected', gate: 'human_approval', nextAction: 'none' },
] as const;

function decision(n: number, env: Env = 'sandbox'): DecisionRecord {
  const state = STATES[n % STATES.length]!;
  const at = '2026-11-26T00:00:00.000Z';
  return {
    id: `dec_${String(n).padStart(8, '0')}`,
    env,
    title: n % 7 === 0 ? `Deploy service ${n}` : `Rotate key ${n}`,
    policy: n % 3 === 0 ? 'spend-approval-v1' : 'decision-gate-v1',
    moduleHash: 'sha256:0',
    context: 'c',
    inputs: [],
    objectives: [],
    ...state,
    reasons: [],
    requiredApprovals: { roles: [], count: 0 },
    approvals: [],
    history: [{ action: 'create', keyId: 'key_a', at, status: 'created', comment: null }],
    createdBy: 'key_a',
    createdAt: at,
    updatedAt: at,
    auditTrail: `trace_${n}`,
    revision: 1,
    subject: null,
  } as DecisionRecord;
}

/** The counts worked out from every decision the list returns, the way counts are defined. */
function countByHand(decisions: DecisionStore, env: Env, selection: DecisionSelection): DecisionCounts {
  const all: DecisionRecord[] = [];
  for (let cursor: string | undefined; ; ) {
    const page = decisions.list(env, { limit: 200, ...(cursor ? { cursor } : {}) });
    all.push(...page.data);
    if (!page.nextCursor) break;
    cursor = page.nextCursor;
  }
  const counts: DecisionCounts = { total: 0, status: {}, gate: {}, nextAction: {}, policy: {} };
  const facets = ['status', 'gate', 'nextAction', 'policy'] as const;
  for (const record of all) {
    if (selection.q && !record.title.toLowerCase().includes(selection.q.toLowerCase())) continue;
    const failed = facets.filter((facet) => selection[facet] && record[facet] !== selection[facet]);
    if (failed.length === 0) counts.total++;
    for (const facet of facets) {
      if (failed.length === 0 || (failed.length === 1 && failed[0] === facet)) counts[facet][record[facet]] = (counts[facet][record[facet]] ?? 0) + 1;
    }
  }
  return counts;
}

const SELECTIONS: DecisionSelection[] = [{}, { status: 'created' }, { nextAction: 'approve', policy: 'decision-gate-v1' }, { gate: 'auto', status: 'executed' }, { q: 'DEPLOY' }, { q: 'service 1', status: 'created' }];

t.test('tallies follow creations and transitions, and counts agree with counting every decision', async (t) => {
  const store = Store.open({ dataDir: tempDir(t) });
  t.teardown(() => store.close());
  const decisions = new DecisionStore(store);
  t.same(await decisions.counts('production', {}), { total: 0, status: {}, gate: {}, nextAction: {}, policy: {} }, 'an env with no decisions');
  await store.commit(() => {
    for (let n = 0; n < 300; n++) decisions.write(decision(n, n % 10 === 0 ? 'production' : 'sandbox'));
  });
  // Move some decisions along (a new status), rewrite some unchanged, as the workflow does.
  await store.commit(() => {
    for (let n = 1; n < 300; n += 4) {
      const stored = decisions.get(n % 10 === 0 ? 'production' : 'sandbox', decision(n).id)!;
      decisions.write({ ...stored, status: 'cancelled', nextAction: 'none', revision: 2, history: [...stored.history, stored.history[0]!] });
    }
    for (let n = 2; n < 300; n += 9) decisions.write(decision(n, n % 10 === 0 ? 'production' : 'sandbox'));
  });
  for (const env of ['sandbox', 'production'] as const) {
    for (const selection of SELECTIONS) t.same(await decisions.counts(env, selection), countByHand(decisions, env, selection), `${env} ${JSON.stringify(selection)}`);
  }
  t.equal((await decisions.counts('sandbox', {})).total + (await decisions.counts('production', {})).total, 300, 'each decision counted once');
});

t.test('decisions stored before tallies existed are tallied when the store is opened', async (t) => {
  const dataDir = tempDir(t);
  let store = Store.open({ dataDir });
  await store.commit(() => {
    for (let n = 0; n < 50; n++) new DecisionStore(store).write(decision(n));
  });
  // What an earlier version left: the decisions without their tallies.
  store.root.transactionSync(() => {
    for (const key of store.database('decision-tallies').getKeys()) store.database('decision-tallies').remove(key);
  });
  await store.close();
  store = Store.open({ dataDir });
  t.teardown(() => store.close());
  const decisions = new DecisionStore(store);
  t.same(await decisions.counts('sandbox', {}), countByHand(decisions, 'sandbox', {}));
  t.equal((await decisions.counts('sandbox', {})).total, 50);
  const again = new DecisionStore(store);
  t.equal((await again.counts('sandbox', {})).total, 50, 'tallied once: a second opening does not count them again');
});

t.test('a page reads a bounded number of decisions and says where to go on', async (t) => {
  const store = Store.open({ dataDir: tempDir(t) });
  t.teardown(() => store.close());
  const decisions = new DecisionStore(store);
  const total = LIST_SCAN_LIMIT + 500;
  await store.commit(() => {
    for (let n = 0; n < total; n++) decisions.write(decision(n));
  });
  // The only decision titled "needle" lies past the first page's reach.
  const needle = { ...decision(total), title: 'The needle' };
  await store.commit(() => decisions.write(needle));
  const first = decisions.list('sandbox', { q: 'needle', limit: 50 });
  t.same(first.data, [], 'nothing matched within the first page reach');
  t.ok(first.nextCursor, 'but the page says where to go on');
  const second = decisions.list('sandbox', { q: 'needle', limit: 50, cursor: first.nextCursor! });
  t.same(second.data.map((d) => d.id), [needle.id], 'the next page finds it');
  t.equal(second.nextCursor, null, 'and is the last');

  const newest = decisions.list('sandbox', { q: 'rotate key 3', order: 'desc', limit: 50 });
  t.ok(newest.data.length > 0 && newest.data.every((d) => d.title.toLowerCase().includes('rotate key 3')), 'matches found early fill the page as before');

  const byTitle = await decisions.counts('sandbox', { q: 'service 1' });
  t.same(byTitle, countByHand(decisions, 'sandbox', { q: 'service 1' }), 'a title count over several read chunks');
});

t.test('the yielding chain check answers as the one-pass check, and lets the event loop turn', async (t) => {
  const store = Store.open({ dataDir: tempDir(t) });
  t.teardown(() => store.close());
  const audit = new AuditLog(store);
  const draft = (i: number): AuditDraft => ({
    at: '2026-11-26T00:00:00.000Z', requestId: `req_${i}`, keyId: 'key_a', env: 'sandbox', method: 'GET', route: '/v1/decisions', path: '/v1/decisions',
    status: 200, code: null, decisionId: null, traceRef: null, policy: null, moduleHash: null, inputDigest: null, result: null, traceparent: null, replayed: false,
  });
  await store.commit(() => {
    for (let i = 0; i < 3_500; i++) audit.appendInTransaction(draft(i));
  });
  let turns = 0;
  const ticker = setInterval(() => turns++, 0);
  const yielding = await audit.verifyYielding();
  clearInterval(ticker);
  t.same(yielding, audit.verify());
  t.match(yielding, { ok: true, entries: 3_500, broken: null });
  t.ok(turns > 0, `timers ran while the chain was checked (${turns})`);

  const entries = store.database<Record<string, unknown>, number>('audit');
  entries.putSync(2_001, { ...entries.get(2_001), status: 500 });
  const broken = await audit.verifyYielding();
  t.same(broken, audit.verify());
  t.match(broken, { ok: false, entries: 2_000, broken: { seq: 2_001, reason: /contents do not match/ } });
});
