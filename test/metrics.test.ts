import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t, { type Test } from 'tap';
import { AuditCheckpoints } from '../core/audit-checkpoints.ts';
import { PolicyEngine } from '../policies/engine/index.ts';
import { bundledEngine } from './helpers/policies.ts';
import { call, issueKey, startTestServer } from './helpers/gatehouse.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';

// /metrics after real events: decisions by status and gate, webhook attempts and deliveries
// against a receiver on 127.0.0.1, policy reloads of a watched source directory, and the audit
// chain's height and last checkpoint.

t.setTimeout(600_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

/** The value of one sample in the Prometheus text, or undefined when it is not there. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const has = (match[2] ?? '').split(',').filter(Boolean);
    if (wanted.length === has.length && wanted.every((l) => has.includes(l))) return Number(match[3]);
  }
  return undefined;
}

async function scrape(url: string): Promise<string> {
  return (await call(url, 'GET', '/metrics')).text;
}

/** Scrapes until `done` holds, every 50 ms for at most 10 s; returns the last scrape. */
async function scrapeUntil(url: string, done: (text: string) => boolean): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const text = await scrape(url);
    if (done(text) || Date.now() > deadline) return text;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

t.test('decisions by status and gate, webhooks, and the audit chain', async (t: Test) => {
  const webhooks = { allow: ['127.0.0.1'], retryScheduleMs: [30], attemptTimeoutMs: 2_000, pollMs: 100 };
  const { url, admin, server } = await startTestServer(t, { policies: engine, webhooks, auditCheckpoints: { everyEntries: 3, everyMs: 60_000 } });
  const scopes = ['decisions:read', 'decisions:write', 'decisions:approve', 'decisions:execute', 'webhooks:manage'];
  const creator = await issueKey(url, admin, { env: 'sandbox', scopes, name: 'creator' });
  const approver = await issueKey(url, admin, { env: 'sandbox', scopes, name: 'approver' });
  // The first delivery fails once and then arrives; the second fails twice and is given up.
  const receiver = await startReceiver(t, (n) => (n === 2 ? 200 : 500));
  const hook = await call(url, 'POST', '/v1/webhooks/config', { key: creator.key, body: { url: receiver.url, events: ['decision.created'] } });
  t.equal(hook.status, 201, hook.text);

  const before = await scrape(url);
  t.equal(sample(before, 'gatehouse_decisions_total', { status: 'created', gate: 'auto' }), undefined, 'no decision counted yet');
  const create = (score: number) =>
    call(url, 'POST', '/v1/decisions', { key: creator.key, body: { title: `risk ${score}`, policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: score }] } });
  const low = await create(10);
  t.equal(low.status, 200, low.text);
  await receiver.waitFor((r) => r.length === 2);
  const high = await create(90);
  t.equal(high.status, 200, high.text);
  const id = high.json.id as string;
  t.equal((await call(url, 'POST', `/v1/decisions/${id}/approve`, { key: creator.key })).status, 403, 'a refused approval stores nothing');
  t.equal((await call(url, 'POST', `/v1/decisions/${id}/approve`, { key: approver.key })).status, 200);
  t.equal((await call(url, 'POST', `/v1/decisions/${id}/execute`, { key: creator.key })).status, 200);
  await receiver.waitFor((r) => r.length === 4);

  const text = await scrapeUntil(url, (s) => sample(s, 'gatehouse_webhook_deliveries_total', { status: 'failed' }) === 1);
  t.equal(sample(text, 'gatehouse_decisions_total', { status: 'created', gate: 'auto' }), 1);
  t.equal(sample(text, 'gatehouse_decisions_total', { status: 'created', gate: 'human_approval' }), 1);
  t.equal(sample(text, 'gatehouse_decisions_total', { status: 'approved', gate: 'human_approval' }), 1);
  t.equal(sample(text, 'gatehouse_decisions_total', { status: 'executed', gate: 'human_approval' }), 1);
  t.equal(sample(text, 'gatehouse_webhook_attempts_total', { result: 'ok' }), 1);
  t.equal(sample(text, 'gatehouse_webhook_attempts_total', { result: 'error' }), 3);
  t.equal(sample(text, 'gatehouse_webhook_deliveries_total', { status: 'delivered' }), 1);
  t.equal(sample(text, 'gatehouse_webhook_deliveries_total', { status: 'failed' }), 1);
  t.equal(sample(await scrape(url), 'gatehouse_decisions_total', { status: 'created', gate: 'auto' }), 1, 'a second scrape does not count again');

  const { store, audit, memory } = server.services;
  // Decisions' memory is recorded after the reply (once the word-vector model has loaded).
  await memory.written();
  const versions = sample(await scrape(url), 'gatehouse_memory_versions', { env: 'sandbox' });
  t.equal(versions, memory.space('sandbox').size, "memory's versions are those its query side holds");
  t.ok(versions! >= 4, 'the decisions recorded added versions (each one, its policy, its context values)');
  t.equal(sample(await scrape(url), 'gatehouse_memory_versions', { env: 'production' }), 0, 'none in production');
  const height = sample(text, 'gatehouse_audit_chain_height');
  t.equal(height, audit.tail().seq, 'the chain height is the last entry');
  t.ok(height! > 6, 'every audited call added an entry');
  const checkpointed = await scrapeUntil(url, (s) => (sample(s, 'gatehouse_audit_last_checkpoint_seq') ?? 0) > 0);
  const last = new AuditCheckpoints(store, audit).last();
  t.ok(last, 'a checkpoint was signed');
  t.equal(sample(checkpointed, 'gatehouse_audit_last_checkpoint_seq'), last!.seq);
  t.equal(sample(checkpointed, 'gatehouse_audit_last_checkpoint_timestamp_seconds'), Date.parse(last!.at) / 1000);
});

const tiny = (gate: string) => `package gatehouse.tiny.v1\n\nallow := true\n\ngate := "${gate}"\n\nnext_action := "execute"\n`;

t.test('policy reloads, and reloads that fail', async (t: Test) => {
  const root = t.testdir({ src: { 'tiny-v1.rego': tiny('auto') } });
  const sourceDir = path.join(root, 'src');
  const watched = await PolicyEngine.open({ sourceDir, buildDir: path.join(root, 'build'), watch: true, debounceMs: 50, log: { info: () => {}, error: () => {} } });
  t.teardown(() => watched.close());
  const { url } = await startTestServer(t, { policies: watched });
  t.equal(sample(await scrape(url), 'gatehouse_policy_reloads_total', { result: 'ok' }), undefined, 'no reload yet');

  const reloaded = () => new Promise((resolve) => watched.once('reload', resolve));
  let next = reloaded();
  await writeFile(path.join(sourceDir, 'tiny-v1.rego'), tiny('review'));
  await next;
  next = reloaded();
  await writeFile(path.join(sourceDir, 'tiny-v1.rego'), 'package gatehouse.tiny.v1\n\nallow if {\n');
  await next;
  const text = await scrape(url);
  t.equal(sample(text, 'gatehouse_policy_reloads_total', { result: 'ok' }), 1);
  t.equal(sample(text, 'gatehouse_policy_reloads_total', { result: 'error' }), 1);
});
