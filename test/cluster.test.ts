import { spawnSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { readAuditSigningKey } from '../core/audit-signing-key.ts';
import { ClusterLink } from '../core/cluster/cluster-link.ts';
import { verifyStreamAudit } from '../core/cluster/stream-audit.ts';
import { Store } from '../core/store.ts';
import { CLUSTER_COMMIT_WINDOW_MS, type ServerConfig } from '../proxy/server.ts';
import { call, issueKey, startTestServer, tempDir, type TestServer } from './helpers/gatehouse.ts';
import { startNatsCluster, type NatsCluster } from './helpers/nats-cluster.ts';
import type { Embedder } from '../core/memory/embedder.ts';
import { VECTORS_DATABASE } from '../core/memory/item-store.ts';
import { WordVectorEmbedder } from '../core/memory/word-vectors.ts';
import { bundledEngine } from './helpers/policies.ts';
import { keyPair, signed, type RawRequest } from './helpers/signing.ts';
import { openStream } from './helpers/stream-client.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';

// Cluster mode (docs/cluster.md) on a real three-server NATS JetStream cluster: two Gatehouse
// instances, each with its own LMDB copy, share one state. Each test has a namespace of its
// own on the one NATS cluster, so each starts from an empty stream.

t.setTimeout(600_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());
const nats: NatsCluster = await startNatsCluster({ size: 3 });
t.teardown(() => nats.stop());

const ALL = ['decisions:read', 'decisions:write', 'decisions:approve', 'decisions:execute', 'stream:subscribe', 'webhooks:manage'];
const BIN = new URL('../bin/gatehouse.js', import.meta.url).pathname;

/** Two instances of one cluster, with the same bootstrap admin key. */
async function pair(t: Test, extra: Partial<ServerConfig> = {}) {
  const namespace = `t${randomBytes(4).toString('hex')}`;
  const adminKey = `gh_live_${randomBytes(24).toString('base64url')}`;
  const start = (nodeId: string, servers: string[], own: Partial<ServerConfig> = {}) =>
    startTestServer(t, { policies: engine, adminKey, signatures: 'off', cluster: { servers, namespace, nodeId }, ...extra, ...own });
  const a = await start('a', nats.urls);
  const b = await start('b', nats.urls);
  // The admin's requests are now signed with the key B registered at its start: A holds it once
  // B's commit is applied there.
  for (let i = 0; i < 250 && (await call(a.url, 'GET', '/v1/keys', { key: adminKey })).status === 401; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  const creator = await issueKey(a.url, a.admin, { env: 'sandbox', scopes: ALL, name: 'creator' });
  const approverA = await issueKey(a.url, a.admin, { env: 'sandbox', scopes: ALL, name: 'approver-a', roles: ['finance-approver'] });
  const approverB = await issueKey(b.url, b.admin, { env: 'sandbox', scopes: ALL, name: 'approver-b', roles: ['cfo'] });
  return { namespace, adminKey, a, b, creator, approverA, approverB, start };
}

const gate = (score: number) => ({ title: `Deploy ${score}`, policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: score }] });
const spend = (amount: number) => ({ title: `Spend ${amount}`, policy: 'spend-approval-v1', context: [{ source: 'finance:amount', value: amount }] });

/**
 * Both instances' last audit entries, once they name the same one (within 5 s): each instance
 * appends its own calls' entries before the other has applied them.
 */
async function settledTails(x: TestServer, y: TestServer): Promise<[unknown, unknown]> {
  const tails = () => [x.server.services.audit.tail(), y.server.services.audit.tail()] as [{ seq: number }, { seq: number }];
  for (let i = 0; i < 500 && tails()[0].seq !== tails()[1].seq; i++) await new Promise((r) => setTimeout(r, 10));
  return tails();
}

async function create(server: TestServer, key: string, body: unknown, headers: Record<string, string> = {}) {
  const answer = await call(server.url, 'POST', '/v1/decisions', { key, body, headers });
  if (answer.status !== 200) throw new Error(`create: ${answer.status} ${answer.text}`);
  return answer;
}

t.test('a decision created on one instance is read, listed and approved on the other at once, and executed back on the first', async (t) => {
  const { a, b, creator, approverB } = await pair(t);
  const created = (await create(a, creator.key, gate(82))).json;
  t.equal(created.status, 'created');
  const read = await call(b.url, 'GET', `/v1/decisions/${created.id}`, { key: creator.key });
  t.equal(read.status, 200, 'read on B right after A answered');
  t.same(read.json, created, 'B holds what A answered');
  const listed = await call(b.url, 'GET', '/v1/decisions?order=desc', { key: creator.key });
  t.ok(listed.json.data.some((d: { id: string }) => d.id === created.id), 'listed on B');
  const approved = await call(b.url, 'POST', `/v1/decisions/${created.id}/approve`, { key: approverB.key, body: { comment: 'ok' } });
  t.equal(approved.status, 200, approved.text);
  // Another caller's write reaches A within the replication lag (docs/cluster.md: stated bound
  // 1 s); acted on before, A's stale copy makes the execution a 409 conflict, never a lost update.
  const started = Date.now();
  let seen = created.revision;
  while (seen < 2 && Date.now() - started < 1000) seen = (await call(a.url, 'GET', `/v1/decisions/${created.id}`, { key: creator.key })).json.revision;
  t.equal(seen, 2, `A holds B's approval after ${Date.now() - started} ms`);
  const executed = await call(a.url, 'POST', `/v1/decisions/${created.id}/execute`, { key: creator.key, body: {} });
  t.equal(executed.status, 200, executed.text);
  t.equal(executed.json.revision, 3, 'A acted on the approval B recorded');
  t.equal((await call(b.url, 'GET', `/v1/decisions/${created.id}`, { key: creator.key })).json.status, 'executed');
});

t.test('what A answered is found on B at once, even while B lags: B catches up on a miss', async (t) => {
  const { a, b, creator, approverB } = await pair(t);
  // B's copy lags: every commit reaching it is applied 300 ms late, in order, as on a busy host.
  const store = b.server.services.store;
  const apply = store.applyReplicated.bind(store);
  store.applyReplicated = (seq, ops, node) => void setTimeout(() => apply(seq, ops, node), 300);
  // One after another, so each time the commit B waits for is the last one the stream has.
  const outcomes: number[][] = [];
  for (let i = 0; i < 3; i++) {
    const { id } = (await create(a, creator.key, gate(82))).json;
    const read = await call(b.url, 'GET', `/v1/decisions/${id}`, { key: creator.key });
    const approved = await call(b.url, 'POST', `/v1/decisions/${id}/approve`, { key: approverB.key, body: {} });
    outcomes.push([read.status, approved.status]);
  }
  t.same(outcomes, [[200, 200], [200, 200], [200, 200]], 'every read and approval on B found the decision A had just created');
  t.equal((await call(b.url, 'GET', '/v1/decisions/dec_0000000000000000000000', { key: creator.key })).status, 404, 'what exists nowhere is still 404 after catching up');
});

t.test('a commit waits out the commit window, so the requests of that time share one publish', async (t) => {
  const { a, creator, namespace, start } = await pair(t, { commitWindowMs: 600 });
  const defaults = await start('c', nats.urls, { commitWindowMs: undefined });
  t.equal(defaults.server.services.store.commitWindowMs, CLUSTER_COMMIT_WINDOW_MS, 'a cluster instance has a window by default');
  const single = await startTestServer(t, { policies: engine, signatures: 'off' });
  t.equal(single.server.services.store.commitWindowMs, 0, 'a single node has none');
  const nc = await connect({ servers: nats.urls, timeout: 5000 });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc, { timeout: 5000 });
  const published = async () => (await jsm.streams.info(`${namespace.toUpperCase()}_COMMITS`)).state.messages;
  // Let the setup's commits, and the memory they record, reach the stream first.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const before = await published();
  const replies: Array<Promise<{ status: number }>> = [];
  for (let i = 0; i < 3; i++) {
    replies.push(create(a, creator.key, gate(10 + i)));
    await new Promise((resolve) => setTimeout(resolve, 120));
  }
  t.same((await Promise.all(replies)).map((reply) => reply.status), [200, 200, 200], 'all three created');
  // Read before the decisions' memory, queued once they committed, waits out a window of its own.
  t.equal((await published()) - before, 1, 'three decisions 120 ms apart went out in one publish');
});

t.test('two instances acting on one decision at once: exactly one transition applies, the other gets 409', async (t) => {
  const { a, b, creator, approverA, approverB } = await pair(t);
  for (let i = 0; i < 15; i++) {
    const { id } = (await create(a, creator.key, spend(5_000))).json;
    const [reject, approve] = await Promise.all([
      call(a.url, 'POST', `/v1/decisions/${id}/reject`, { key: approverB.key, body: { comment: 'no' } }),
      call(b.url, 'POST', `/v1/decisions/${id}/approve`, { key: approverA.key, body: { comment: 'yes' } }),
    ]);
    const statuses = [reject.status, approve.status].sort();
    t.same(statuses, [200, 409], `pair ${i}: one applies, one is refused (${reject.status}, ${approve.status})`);
    const loser = reject.status === 409 ? reject : approve;
    // The loser either raced the winner's commit (`conflict`: its copy changed under it) or,
    // on a busy host, read the winner's outcome first (`invalid_transition`); both are 409s.
    t.match(loser.json.code, /^(conflict|invalid_transition)$/, `pair ${i}: the loser is told why (${loser.json.code})`);
    for (const server of [a, b]) {
      const stored = (await call(server.url, 'GET', `/v1/decisions/${id}`, { key: creator.key })).json;
      t.equal(stored.status, reject.status === 200 ? 'rejected' : 'approved', `pair ${i}: the winner's transition is what ${server === a ? 'A' : 'B'} holds`);
      t.equal(stored.revision, 2, `pair ${i}: one change stored`);
    }
  }
});

t.test('an Idempotency-Key answered on A replays byte for byte on B; one in flight on A is refused on B', async (t) => {
  const { a, b, creator } = await pair(t);
  const first = await create(a, creator.key, gate(82), { 'idempotency-key': 'deploy-1' });
  const retry = await call(b.url, 'POST', '/v1/decisions', { key: creator.key, body: gate(82), headers: { 'idempotency-key': 'deploy-1' } });
  t.equal(retry.status, 200);
  t.equal(retry.headers.get('idempotent-replayed'), 'true', 'B replays');
  t.equal(retry.text, first.text, "byte for byte A's body");
  const listed = await call(b.url, 'GET', '/v1/decisions', { key: creator.key });
  t.equal(listed.json.data.length, 1, 'one decision exists');

  // A request on A holds the key (claimed as A's pipeline claims it) while B is asked.
  const scoped: ['sandbox', string, string] = ['sandbox', creator.id, 'deploy-2'];
  const claim = await a.server.services.idempotency.claim(scoped, 'fingerprint');
  t.equal(claim.kind, 'claimed');
  const overlapping = await call(b.url, 'POST', '/v1/decisions', { key: creator.key, body: gate(82), headers: { 'idempotency-key': 'deploy-2' } });
  t.equal(overlapping.status, 409, overlapping.text);
  t.equal(overlapping.json.code, 'idempotency_in_flight');
  a.server.services.idempotency.release(scoped);
  let after = await call(b.url, 'POST', '/v1/decisions', { key: creator.key, body: gate(82), headers: { 'idempotency-key': 'deploy-2' } });
  for (let i = 0; i < 50 && after.status === 409; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    after = await call(b.url, 'POST', '/v1/decisions', { key: creator.key, body: gate(82), headers: { 'idempotency-key': 'deploy-2' } });
  }
  t.equal(after.status, 200, 'once A releases the key, B runs the request');
});

t.test('a key revoked on A is refused on B within a second', async (t) => {
  const { a, b, creator } = await pair(t);
  t.equal((await call(b.url, 'GET', '/v1/decisions', { key: creator.key })).status, 200);
  const revoked = await call(a.url, 'DELETE', `/v1/keys/${creator.id}`, { key: a.admin });
  t.equal(revoked.status, 200, revoked.text);
  const started = Date.now();
  let status = 200;
  while (status === 200 && Date.now() - started < 1000) status = (await call(b.url, 'GET', '/v1/decisions', { key: creator.key })).status;
  t.equal(status, 401, `refused on B after ${Date.now() - started} ms`);
});

/** Sends `request` to `url`'s server as it stands, under the Host it was signed for (`host`), as a load balancer in front passes it on. */
function sendAs(url: string, host: string, request: RawRequest): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(url + request.path, { method: request.method, headers: { ...request.headers, host } }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(text) as Record<string, unknown> }));
    });
    outgoing.on('error', reject);
    outgoing.end(request.body);
  });
}

t.test('a signature used on A is refused as a replay on B, and one B saw first on A', async (t) => {
  const { a, b, creator } = await pair(t);
  const pairKey = keyPair('ed25519');
  const registered = await call(a.url, 'POST', `/v1/keys/${creator.id}/signing-keys`, { key: creator.key, body: { jwk: pairKey.jwk } });
  t.equal(registered.status, 201, 'a signing key registered on A');
  // Both instances behind one name, as behind a load balancer: the signature covers that authority.
  const host = new URL(a.url).host;
  const sign = () => signed(a.url, creator.key, pairKey.signer, { method: 'POST', path: '/v1/decisions', body: JSON.stringify(gate(10)) });
  const started = Date.now();
  let first = await sendAs(a.url, host, sign());
  t.equal(first.status, 200, 'a signed request accepted on A');
  // B knows the signing key once it has applied A's commit (well within a second).
  let fresh = await sendAs(b.url, host, sign());
  while (fresh.status === 401 && fresh.json.check === 'unknown_key' && Date.now() - started < 5000) fresh = await sendAs(b.url, host, sign());
  t.equal(fresh.status, 200, `a fresh signature is accepted on B (${fresh.status === 200 ? 'created' : JSON.stringify(fresh.json)})`);

  const used = sign();
  first = await sendAs(a.url, host, used);
  t.equal(first.status, 200);
  const replayed = await sendAs(b.url, host, used);
  t.equal(replayed.status, 401, 'the same signed request on B is refused');
  t.match(replayed.json, { code: 'signature_invalid', check: 'replay', detail: /already used on another instance/ });
  const usedOnB = sign();
  t.equal((await sendAs(b.url, host, usedOnB)).status, 200);
  t.match(await sendAs(a.url, host, usedOnB), { status: 401, json: { code: 'signature_invalid', check: 'replay' } }, 'and the other way round');
  t.match(await sendAs(a.url, host, used), { status: 401, json: { check: 'replay', detail: /already used \(/ } }, 'on the instance that saw it, its own guard refuses it first');
});

t.test('one audit chain for the cluster: both copies hold it, and the stream verifies end to end', async (t) => {
  const { namespace, a, b, creator, approverB } = await pair(t);
  for (let i = 0; i < 10; i++) {
    const [x] = await Promise.all([create(a, creator.key, gate(82)), create(b, creator.key, gate(10))]);
    await call(b.url, 'POST', `/v1/decisions/${x.json.id}/approve`, { key: approverB.key, body: {} });
  }
  const heads = [a, b].map((s) => s.server.services.audit.verify());
  t.ok(heads[0]!.ok && heads[1]!.ok, 'each copy verifies');
  t.same(...(await settledTails(a, b)), 'the same chain, entry for entry');
  const link = await ClusterLink.connect({ servers: nats.urls, namespace, nodeId: 'verifier' }, false);
  t.teardown(() => link.close());
  const walked = await verifyStreamAudit(link);
  t.equal(walked.ok, true, JSON.stringify(walked.broken));
  t.equal(walked.entries, a.server.services.audit.tail().seq, 'every entry of every instance is in the stream');
  const cli = spawnSync(process.execPath, [BIN, 'audit', 'verify', '--nats', nats.urls.join(','), '--nats-namespace', namespace], { encoding: 'utf8', timeout: 60_000 });
  t.equal(cli.status, 0, cli.stderr);
  t.match(cli.stdout, new RegExp(`^ok: ${walked.entries} entries hold`), 'the command says so');
});

t.test('audit export --nats: the cluster\'s log from its stream, verifiable as a chain anywhere', async (t) => {
  const { namespace, a, b, creator } = await pair(t);
  for (let i = 0; i < 5; i++) await Promise.all([create(a, creator.key, gate(82)), create(b, creator.key, gate(10))]);
  // The export below runs synchronously, holding this process's event loop, where A applies
  // B's commits: A must hold B's last one before, or its copy lags the stream it is compared to.
  await settledTails(a, b);
  const dir = tempDir(t);
  const file = join(dir, 'cluster-audit.ndjson');
  const nats_ = ['--nats', nats.urls.join(','), '--nats-namespace', namespace];
  const exported = spawnSync(process.execPath, [BIN, 'audit', 'export', ...nats_, '--out', file], { encoding: 'utf8', timeout: 60_000 });
  t.equal(exported.status, 0, exported.stderr);
  const entries = a.server.services.audit.tail().seq;
  t.ok(entries >= 10, `the cluster holds ${entries} entries`);
  t.match(exported.stderr, new RegExp(`exported ${entries} entries to`), 'every entry of the stream');
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  t.match(JSON.parse(lines[0]!), { type: 'gatehouse-audit-export', publicKey: null, tail: a.server.services.audit.tail() }, 'a header with the tail, and no key');
  const held = [...a.server.services.audit.all()].map((entry) => JSON.parse(JSON.stringify(entry)));
  t.same(lines.slice(1).map((line) => JSON.parse(line)), held, 'the entries A holds, in its order');

  // The verifier insists on a key to trust; the export has no checkpoints for it to check.
  const key = ['--public-key', JSON.stringify((await readAuditSigningKey(join(a.dataDir, 'audit-signing-key.pem')))!.jwk)];
  const verified = spawnSync(process.execPath, [BIN, 'audit', 'verify', '--export', file, ...key, '--data-dir', join(dir, 'absent')], { encoding: 'utf8', timeout: 60_000 });
  t.match(verified.stdout, new RegExp(`audit chain intact: ${entries} entries`), 'the chain verifies from the export alone');

  writeFileSync(file, `${lines.map((line) => line.replace('"status":200', '"status":201')).join('\n')}\n`);
  const broken = spawnSync(process.execPath, [BIN, 'audit', 'verify', '--export', file, ...key], { encoding: 'utf8', timeout: 60_000 });
  t.equal(broken.status, 1, 'an edited export does not verify');
  t.match(broken.stderr, /audit chain broken at entry \d+/);

  const opa = spawnSync(process.execPath, [BIN, 'audit', 'export', ...nats_, '--format', 'opa'], { encoding: 'utf8', timeout: 60_000 });
  t.equal(opa.status, 2, 'OPA decision logs are not exported from the stream');
  t.match(opa.stderr, /--nats exports the verifiable format only/);
});

t.test('the stream on B delivers what A commits, and a subscriber resumes on A from its cursor', async (t) => {
  const { a, b, creator } = await pair(t);
  const onB = await openStream(t, b.url, creator.key);
  onB.send({ type: 'subscribe', topics: ['decisions'] });
  await onB.next((m) => m.type === 'subscribed');
  const first = (await create(a, creator.key, gate(82))).json;
  const seen = await onB.next((m) => m.type === 'event' && m.topic === `decisions/${first.id}`);
  await onB.close();
  const missed = [(await create(a, creator.key, gate(10))).json.id, (await create(b, creator.key, gate(20))).json.id];
  const onA = await openStream(t, a.url, creator.key);
  onA.send({ type: 'subscribe', topics: ['decisions'], since: seen.cursor });
  await onA.next((m) => m.type === 'subscribed');
  for (const id of missed) await onA.next((m) => m.type === 'event' && m.topic === `decisions/${id}`);
  const events = onA.messages.filter((m) => m.type === 'event');
  t.notOk(events.some((m) => m.cursor <= seen.cursor), 'nothing at or before the cursor again');
  t.equal(new Set(events.map((m) => m.cursor)).size, events.length, 'no event twice');
  t.same(events.map((m) => m.topic), missed.map((id) => `decisions/${id}`), 'exactly the missed events, in order');
});

t.test('a data directory of a single-node server does not join; a cluster copy refuses writes from outside the cluster', async (t) => {
  const { namespace, a, adminKey } = await pair(t);
  const single = await startTestServer(t, { policies: engine });
  await single.server.close();
  await t.rejects(
    startTestServer(t, { policies: engine, adminKey, dataDir: single.dataDir, cluster: { servers: nats.urls, namespace } }),
    /holds data written outside cluster mode/,
  );
  await a.server.close();
  const copy = Store.open({ dataDir: a.dataDir });
  t.teardown(() => copy.close());
  await t.rejects(copy.commit(() => {}), /cluster instance's copy/);
});

t.test('an instance started later, or from an empty directory, rebuilds its copy from the stream', async (t) => {
  const { a, creator, start } = await pair(t);
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) ids.push((await create(a, creator.key, gate(82))).json.id);
  const c = await start('c', nats.urls);
  for (const id of ids) t.equal((await call(c.url, 'GET', `/v1/decisions/${id}`, { key: creator.key })).status, 200, `${id} on the new instance`);
  t.same(...(await settledTails(c, a)), 'the same chain');
});

t.test('webhooks: every event of every instance is delivered once, by one instance, retried by any', async (t) => {
  // The receiver fails every third request once: those deliveries are retried after a backoff.
  const failed = new Set<string>();
  const receiver = await startReceiver(t, (_n, body) => {
    const id = JSON.parse(body).data?.id as string;
    if (id && id.endsWith('0') && !failed.has(id)) {
      failed.add(id);
      return 503;
    }
    return 200;
  });
  const { a, b, creator } = await pair(t, { webhooks: { allow: ['127.0.0.1'], retryScheduleMs: [200, 200, 200], attemptTimeoutMs: 2000, disableAfterFailures: 20, rotationGraceMs: 1000, pollMs: 1000 } });
  const endpoint = await call(a.url, 'POST', '/v1/webhooks/config', { key: creator.key, body: { url: receiver.url, events: ['decision.created'] } });
  t.equal(endpoint.status, 201, endpoint.text);
  const ids: string[] = [];
  for (let i = 0; i < 10; i++) {
    const [x, y] = await Promise.all([create(a, creator.key, gate(82)), create(b, creator.key, gate(10))]);
    ids.push(x.json.id, y.json.id);
  }
  const delivered = (received: typeof receiver.received) => new Set(received.filter((r) => r.status === 200).map((r) => JSON.parse(r.body).data.id));
  await receiver.waitFor((received) => ids.every((id) => delivered(received).has(id)), 30_000);
  // Anything sent twice would arrive within a moment of the first.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const successes = receiver.received.filter((r) => r.status === 200);
  t.equal(successes.length, ids.length, 'each event delivered successfully exactly once');
  const byMessage = new Map<string, number>();
  for (const r of receiver.received) byMessage.set(String(r.headers['webhook-id']), (byMessage.get(String(r.headers['webhook-id'])) ?? 0) + 1);
  t.ok([...byMessage.values()].every((n) => n <= 2), 'no message attempted more often than its one failure and one retry');
  t.equal(receiver.received.length, ids.length + failed.size, 'failed attempts were retried once each, nothing else');
  const order = successes.map((r) => JSON.parse(r.body).data.id as string);
  const positions = ids.map((id) => order.indexOf(id));
  t.ok(positions.every((p) => p >= 0), 'all delivered');
});

t.test('readiness says when another instance serves other policies', async (t) => {
  const { b, start } = await pair(t);
  t.equal((await call(b.url, 'GET', '/readyz')).json.status, 'ready', 'the same policies everywhere: ready');
  const fewer = {
    names: () => engine.names().filter((name) => name !== 'spend-approval-v1'),
    has: (name: string) => name !== 'spend-approval-v1' && engine.has(name),
    info: (name: string) => (name === 'decision-gate-v1' ? { name, moduleHash: 'sha256:other' } : engine.info(name)),
    evaluateJson: (name: string, input: string) => engine.evaluateJson(name, input),
  };
  const c = await start('c', nats.urls, { policies: fewer });
  const ready = await call(c.url, 'GET', '/readyz');
  t.equal(ready.status, 200);
  t.equal(ready.json.status, 'degraded');
  t.same(
    ready.json.clusterDifferences.map((d: { node: string }) => d.node).sort(),
    ['a', 'b'],
    'both other instances are named',
  );
  t.match(ready.json.clusterDifferences[0], { missing: [], extra: ['spend-approval-v1'], changed: ['decision-gate-v1'] });
});

t.test('an instance starting up fails only the unfinished sends of instances that are gone', async (t) => {
  const { a, b } = await pair(t);
  const held = (id: string, sender: string) =>
    ({ id, env: 'sandbox', decisionId: `dec_${id}`, auditTrail: `trc_${id}`, state: 'pending', outcome: null, createdAt: '', updatedAt: '', sender }) as never;
  const { store, heldRequests } = a.server.services;
  await store.commit(() => {
    heldRequests.write(held('held_alive', 'a'));
    heldRequests.write(held('held_ghost', 'ghost'));
  });
  const onB = (id: string) => b.server.services.heldRequests.forDecision({ subject: { type: 'proxy-request', id }, env: 'sandbox' } as never);
  for (let i = 0; i < 100 && !(onB('held_ghost') && b.server.services.alive('a')); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  t.ok(b.server.services.alive('a'), 'B knows A is alive');
  t.notOk(b.server.services.alive('ghost'), 'and that no instance "ghost" is');
  t.equal(await b.server.services.heldRequests.failInterrupted(b.server.services.alive), 1, 'only the send of the instance that is gone is failed');
  t.equal(onB('held_ghost')?.state, 'failed');
  t.equal(onB('held_alive')?.state, 'pending', "A's send in progress is left to A");
});

t.test('memory written on either instance is served by both, and an instance restarts on its copy', async (t) => {
  const { namespace, a, b, adminKey } = await pair(t);
  const writer = await issueKey(a.url, a.admin, { env: 'sandbox', scopes: ['memory:read', 'memory:write'] });
  const write = (server: TestServer, key: string, text: string) => call(server.url, 'POST', '/v1/memory', { key: writer.key, body: { namespace: 'notes', key, text } });
  const onA = await write(a, 'runbook', 'restart the payment service with care');
  t.equal(onA.status, 201, onA.text);
  // B knows the key once the commit that issued it has reached its copy.
  let onB = await write(b, 'oncall', 'the on-call rotation changes on mondays');
  for (let i = 0; i < 100 && onB.status === 401; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    onB = await write(b, 'oncall', 'the on-call rotation changes on mondays');
  }
  t.equal(onB.status, 201, onB.text);
  const read = (server: TestServer, id: string) => call(server.url, 'GET', `/v1/memory/${id}`, { key: writer.key });
  for (let i = 0; i < 100 && (await read(a, onB.json.id)).status !== 200; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  t.equal((await read(a, onB.json.id)).status, 200, "A serves B's item");
  t.equal((await read(b, onA.json.id)).status, 200, "B serves A's item");
  t.equal((await write(a, 'runbook', 'restart the payment service with great care')).json.version, 2, "A's next version of its item follows the one B also holds");
  await a.server.close();
  const restarted = await startTestServer(t, { policies: engine, adminKey, signatures: 'off', dataDir: a.dataDir, cluster: { servers: nats.urls, namespace, nodeId: 'a' } });
  t.equal((await read(restarted, onB.json.id)).status, 200, 'the restarted instance rebuilt its memory, both instances\' versions included');
  t.equal((await read(restarted, onA.json.id)).json.version, 2);
});

t.test('one key written on both instances at once is one item, its versions numbered in the commit order, alike on both', async (t) => {
  const { a, b, creator } = await pair(t);
  const writer = await issueKey(a.url, a.admin, { env: 'sandbox', scopes: ['memory:read', 'memory:write', 'decisions:write'] });
  // B knows the key once the commit that issued it has reached its copy.
  for (let i = 0; i < 100 && (await call(b.url, 'GET', '/v1/memory', { key: writer.key })).status === 401; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  const write = (server: TestServer, text: string) => call(server.url, 'POST', '/v1/memory', { key: writer.key, body: { namespace: 'notes', key: 'shared', text } });
  const replies: Array<{ id: string; version: number; revision: number; text: string }> = [];
  for (let round = 0; round < 8; round++) {
    for (const answer of await Promise.all([write(a, `from A, round ${round}`), write(b, `from B, round ${round}`)])) {
      if (answer.status !== 201) t.fail(`a write was refused: ${answer.status} ${answer.text}`);
      replies.push(answer.json);
    }
  }
  t.same(new Set(replies.map((reply) => reply.id)).size, 1, 'both instances wrote one item');
  t.same(replies.map((reply) => reply.version).sort((x, y) => x - y), Array.from({ length: 16 }, (_, i) => i + 1), 'sixteen versions, none given twice');
  // Decisions on both at once record their context value and policy into memory on each.
  const gate = (score: number) => ({ title: `Deploy ${score}`, policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: score }] });
  for (let round = 0; round < 4; round++) await Promise.all([create(a, creator.key, gate(round)), create(b, creator.key, gate(100 + round))]);
  await Promise.all([a, b].map(({ server }) => server.services.memory.written()));
  const applied = () => [a, b].map(({ server }) => server.services.store.applied);
  for (let i = 0; i < 500 && applied()[0] !== applied()[1]; i++) await new Promise((resolve) => setTimeout(resolve, 10));

  const versions = async (server: TestServer, ref: string) => {
    const answer = await call(server.url, 'GET', `/v1/memory/${ref}/versions`, { key: writer.key });
    if (answer.status !== 200) t.fail(`reading the versions of ${ref}: ${answer.status} ${answer.text}`);
    return (answer.json.versions as Array<{ id: string; version: number; revision: number; text: string }>).map(({ id, version, revision, text }) => ({ id, version, revision, text }));
  };
  const onA = await versions(a, 'notes:shared');
  t.same(await versions(b, 'notes:shared'), onA, 'B holds the same versions with the same revisions');
  t.same(onA.map(({ version, text }) => [version, text]), replies.map(({ version, text }) => [version, text]).sort((x, y) => Number(x[0]) - Number(y[0])), 'each version holds what its writer was told it stored');
  t.ok(onA.every((v, i) => i === 0 || v.revision > onA[i - 1]!.revision), 'revisions grow with versions');
  for (const namespace of ['risk', 'policies']) {
    const listed = await Promise.all([a, b].map((server) => call(server.url, 'GET', `/v1/memory?namespace=${namespace}`, { key: writer.key })));
    t.equal(listed[0]!.json.data.length, 1, `one ${namespace} item, written by whichever instance came first`);
    t.same(listed[1]!.json, listed[0]!.json, `${namespace}: the same on both`);
  }
  t.equal((await versions(a, 'risk:score')).length, 8, 'each decision on either instance gave risk:score a version');
  const asOf = onA[5]!.revision;
  const read = await Promise.all([a, b].map((server) => call(server.url, 'GET', `/v1/memory/notes:shared?asOf=${asOf}`, { key: writer.key })));
  t.same(read[1]!.json, read[0]!.json, 'asOf a revision answers alike on both');
  t.equal(read[0]!.json.version, 6);

  // A question decided on A and then again on B: B's decision supersedes A's in memory.
  const question = { title: 'Rotate the signing keys', policy: 'decision-gate-v1', context: 'quarterly' };
  const first = (await create(a, creator.key, question)).json.id;
  await a.server.services.memory.written();
  for (let i = 0; i < 500 && b.server.services.store.applied < a.server.services.store.applied; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  const again = (await create(b, creator.key, question)).json.id;
  await b.server.services.memory.written();
  const decisionItem = async (server: TestServer, id: string) => (await call(server.url, 'GET', `/v1/memory/decisions:${id}`, { key: writer.key })).json;
  const firstItem = await decisionItem(a, first);
  const links = (await decisionItem(b, again)).links as Array<{ relation: string; to: string }>;
  t.same(links.filter((link) => link.relation === 'supersedes').map((link) => link.to), [firstItem.id], "B's decision supersedes the one A recorded");
});

/** An embedder as a service is one (no `embedNow`: its vectors are stored and replicated), giving the word-vector model's vectors; `seen` collects the texts it embeds. */
function serviceEmbedder(seen: string[] = []): Embedder {
  const words = new WordVectorEmbedder();
  return { id: words.id, dimensions: words.dimensions, embed: (texts) => (seen.push(...texts), words.embed(texts)) };
}

t.test("an embedding service's vector of a decision is embedded by the instance that wrote it; another takes it from the cluster", async (t) => {
  const { a, start, creator } = await pair(t, { embedder: serviceEmbedder() });
  const embedded: string[] = [];
  const c = await start('c', nats.urls, { embedder: serviceEmbedder(embedded) });
  // Issued on C: the admin's requests are now signed with the key C registered at its start, which A may not hold yet.
  const reader = await issueKey(c.url, c.admin, { env: 'sandbox', scopes: ['memory:read'] });
  const titles = ['Rotate the kestrel certificates', 'Migrate the heron queue', 'Resize the osprey cluster'];
  const ids: string[] = [];
  // A decision's memory text is its title and context: the context tells its embedding from C's queries'.
  for (const title of titles) ids.push((await create(a, creator.key, { title, policy: 'decision-gate-v1', context: 'filed by the night shift' })).json.id);
  // C finds each by meaning alone once a vector for it is in C's index.
  const found = async (title: string, id: string) => {
    const answer = await call(c.url, 'POST', '/v1/memory/query', { key: reader.key, body: { query: title, namespaces: ['decisions'], weights: { semantic: 1, lexical: 0, graph: 0 } } });
    return answer.status === 200 && answer.json.results.some((r: { key: string; scores: { semantic: number } }) => r.key === id && r.scores.semantic > 0);
  };
  for (const [i, title] of titles.entries()) {
    let ok = false;
    for (let tries = 0; tries < 100 && !ok; tries++) {
      ok = await found(title, ids[i]!);
      if (!ok) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    t.ok(ok, `C finds "${title}" by its vector`);
  }
  // Past the grace C would wait before embedding a version whose vector never came.
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  t.same(embedded.filter((text) => text.includes('night shift')), [], 'C embedded none of them: their vectors came from A');
});

t.test('with the built-in model every instance works out the vectors of what it learns: none crosses the cluster', async (t) => {
  const { a, b, creator } = await pair(t);
  const reader = await issueKey(b.url, b.admin, { env: 'sandbox', scopes: ['memory:read'] });
  const { id } = (await create(a, creator.key, { title: 'Rotate the kestrel certificates', policy: 'decision-gate-v1', context: 'filed by the night shift' })).json;
  let semantic = 0;
  for (let tries = 0; tries < 100 && semantic === 0; tries++) {
    const answer = await call(b.url, 'POST', '/v1/memory/query', { key: reader.key, body: { query: 'kestrel certificates', namespaces: ['decisions'], weights: { semantic: 1, lexical: 0, graph: 0 } } });
    semantic = answer.status === 200 ? (answer.json.results.find((r: { key: string }) => r.key === id)?.scores.semantic ?? 0) : 0;
    if (semantic === 0) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.ok(semantic > 0, "B finds A's decision by its vector");
  for (const server of [a, b]) t.equal([...server.server.services.store.database(VECTORS_DATABASE).getKeys({})].length, 0, 'no vector is stored, nor replicated');
});

t.test('retention: each instance drops the oldest decisions from memory, and an approval on B of one both dropped is the next version of the same item on both', async (t) => {
  const { a, b, creator, approverB } = await pair(t, { memoryDecisions: 2 });
  const memoryOf = (server: TestServer) => server.server.services.memory;
  const ids: string[] = [];
  for (let i = 0; i < 10; i++) ids.push((await create(i % 2 ? b : a, creator.key, gate(80 + i))).json.id);
  const settled = async () => {
    await Promise.all([a, b].map((server) => memoryOf(server).written()));
    const applied = () => [a, b].map(({ server }) => server.services.store.applied);
    for (let i = 0; i < 500 && applied()[0] !== applied()[1]; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    await Promise.all([a, b].map((server) => memoryOf(server).settled()));
  };
  await settled();
  const firstItem = memoryOf(a).idForKey('sandbox', 'decisions', ids[0]!)!;
  t.ok(firstItem, "the first decision's item");
  t.equal(memoryOf(b).idForKey('sandbox', 'decisions', ids[0]!), firstItem, 'B finds it by its key too');
  for (const [name, server] of [['A', a], ['B', b]] as const) {
    const space = memoryOf(server).space('sandbox');
    t.ok(space.decisions <= 6, `${name} holds ${space.decisions} of 10 decisions`);
    t.notOk(space.holds(firstItem), `${name} dropped the first`);
  }
  const approved = await call(b.url, 'POST', `/v1/decisions/${ids[0]}/approve`, { key: approverB.key, body: { comment: 'late' } });
  t.equal(approved.status, 200, approved.text);
  await settled();
  for (const [name, server] of [['A', a], ['B', b]] as const) {
    const versions = memoryOf(server).versions('sandbox', firstItem).map((item) => [item.version, item.attributes.status]);
    t.same(versions, [[1, 'created'], [2, 'approved']], `${name}: the approval is version 2 of the same item`);
    t.ok(memoryOf(server).space('sandbox').holds(firstItem), `${name} holds it again`);
  }
});
