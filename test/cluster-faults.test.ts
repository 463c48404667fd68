import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import t, { type Test } from 'tap';
import { ClusterLink } from '../core/cluster/cluster-link.ts';
import { verifyStreamAudit } from '../core/cluster/stream-audit.ts';
import { call, startTestServer, tempDir, type TestServer } from './helpers/gatehouse.ts';
import { startNatsCluster, type NatsCluster, type NatsServer } from './helpers/nats-cluster.ts';
import { bundledEngine } from './helpers/policies.ts';
import { createUntilAnswered, listAllDecisions, postDecision, longestGap, steadyLoad, type Instance, type Write } from './helpers/retrying-writes.ts';
import { startServe, type ServeProcess } from './helpers/serve-process.ts';
import { openStream } from './helpers/stream-client.ts';

// The faults of cluster mode (issue 18, docs/cluster.md) with real parts: a three-server NATS
// JetStream cluster of real nats-server processes, Gatehouse instances in this process and, where
// one must be SIGKILLed, as `gatehouse serve` child processes. Each test has a namespace (its own
// stream and bucket) on the one NATS cluster; the last restarts the whole cluster.

t.setTimeout(600_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());
// A busy machine may take longer than the default 20 s to elect leaders for every group.
const nats: NatsCluster = await startNatsCluster({ size: 3, readyTimeoutMs: 60_000 });
t.teardown(() => nats.stop());

const SCOPES = ['decisions:read', 'decisions:write', 'stream:subscribe'];
/** Load tests measure faults, not the per-key rate limit. */
const UNLIMITED = { sandbox: { ratePerSecond: 100_000, burst: 100_000 } };
/** Long enough for a retry to outwait an Idempotency-Key claimed by a dead instance (IN_FLIGHT_TTL_MS, 60 s). */
const WRITE_TIMEOUT_MS = 90_000;

/**
 * One cluster namespace and the in-process instances started on it. Its stream and buckets are
 * deleted once the test's instances have stopped (teardowns run last first): fewer Raft groups
 * for the later tests' restarts to wait for.
 */
function clusterOf(t: Test) {
  const namespace = `f${randomBytes(4).toString('hex')}`;
  t.teardown(() => dropNamespace(namespace));
  const adminKey = `gh_live_${randomBytes(24).toString('base64url')}`;
  const start = (nodeId: string, servers = nats.urls, dataDir?: string) =>
    startTestServer(t, { policies: engine, adminKey, signatures: 'off', rateLimits: UNLIMITED, cluster: { servers, namespace, nodeId }, ...(dataDir ? { dataDir } : {}) });
  return { namespace, adminKey, start };
}

/**
 * A sandbox key issued on `issuer`, known to `others` too before it is used there. Issued
 * unsigned (signatures are off): the admin's remembered signing key is the last started
 * instance's, which another instance may not have applied yet.
 */
async function creatorOn(issuer: TestServer, ...others: Array<{ url: string }>): Promise<{ id: string; key: string }> {
  const issued = await call(issuer.url, 'POST', '/v1/keys', { key: issuer.admin, body: { env: 'sandbox', scopes: SCOPES, name: 'creator' }, signer: null });
  if (issued.status !== 201) throw new Error(`issuing a key failed: ${issued.status} ${issued.text}`);
  for (const other of others) {
    const status = await readWithin(other, issued.json.key, '/v1/decisions?limit=1', 10_000);
    if (status !== 200) throw new Error(`the key issued on ${issuer.url} is not known on ${other.url}: ${status}`);
  }
  return issued.json;
}

/**
 * Reads `path` on `server` until it answers 200 or `timeoutMs` passes; the last status (0: no
 * answer). A read is answered once the instance has applied what it reads and can record the
 * read in the audit log, through the cluster.
 */
async function readWithin(server: { url: string }, key: string, path: string, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let status = 0;
  while (Date.now() < deadline) {
    status = await call(server.url, 'GET', path, { key }).then((answer) => answer.status, () => 0);
    if (status === 200) break;
    await sleep(100);
  }
  return status;
}
const instance = (name: string, server: { url: string }): Instance => ({ name, url: server.url });

/** Deletes the stream and buckets of `namespace` (their consumers with them). */
async function dropNamespace(namespace: string): Promise<void> {
  const nc = await connect({ servers: nats.urls, timeout: 5000 });
  try {
    const jsm = await jetstreamManager(nc, { timeout: 5000 });
    for await (const name of jsm.streams.names()) if (name.toLowerCase().includes(namespace)) await jsm.streams.delete(name);
  } finally {
    await nc.close();
  }
}

/** Brings every NATS server back: continued if stopped, started if gone. */
async function restoreNats(): Promise<void> {
  for (const server of nats.servers) if (server.state() === 'stopped') await server.kill('SIGCONT');
  const gone = nats.servers.filter((server) => server.state() === 'gone');
  await Promise.all(gone.map((server) => server.start()));
}

/** Which server leads the commit stream of `namespace`, and each of its consumers (the instances' ordered readers among them). */
async function placement(namespace: string): Promise<string> {
  const stream = `${namespace.toUpperCase()}_COMMITS`;
  const leaders = new Map<string, string | null>();
  for (const server of await nats.status()) {
    for (const view of server.groups) if (view.group === stream || view.group.startsWith(`${stream}/`)) leaders.set(view.group, view.leader ?? leaders.get(view.group) ?? null);
  }
  return [...leaders].map(([group, leader]) => `${group === stream ? 'the commit stream' : group.slice(stream.length + 1)} on ${leader}`).join(', ');
}

/** Summary of a write for assertion messages. */
const summary = (write: Write) => ({ title: write.title, answer: write.answer, attempts: write.attempts.map((a) => `${a.instance}:${a.status ?? a.code}`).join(' ') });

/**
 * Every write answered 200 is listed exactly once, under the id it was answered with; no title
 * is listed twice; nothing is listed that no write asked for.
 */
function checkExactlyOnce(t: Test, where: string, listed: Array<{ id: string; title: string }>, writes: Write[]): void {
  const byTitle = new Map<string, string[]>();
  for (const { id, title } of listed) byTitle.set(title, [...(byTitle.get(title) ?? []), id]);
  const answered = writes.filter((write) => write.answer);
  const wrong = answered.filter((write) => {
    const ids = byTitle.get(write.title) ?? [];
    return ids.length !== 1 || ids[0] !== write.answer!.id;
  });
  t.same(wrong.map(summary), [], `${where}: each of the ${answered.length} decisions answered 200 is listed once, under the id answered`);
  t.same([...byTitle].filter(([, ids]) => ids.length > 1), [], `${where}: no decision created twice`);
  const asked = new Set(writes.map((write) => write.title));
  t.same(listed.filter(({ title }) => !asked.has(title)), [], `${where}: nothing listed that no write asked for`);
}

/**
 * The audit chain: every in-process copy holds the same one and verifies, and the stream's walk
 * (core/cluster/stream-audit.ts) verifies with as many entries.
 */
async function checkAudit(t: Test, namespace: string, servers: TestServer[]): Promise<number> {
  const tails = () => servers.map((server) => server.server.services.audit.tail());
  // The last commits of one instance may still be on their way to the others; after a fault, an
  // instance's reader may take a while to find the stream again.
  const waitStarted = Date.now();
  for (let i = 0; i < 900 && new Set(tails().map((tail) => tail.hash)).size > 1; i++) await sleep(50);
  if (Date.now() - waitStarted > 1000) t.comment(`the copies took ${Date.now() - waitStarted} ms to reach the same last entry`);
  const [first, ...others] = tails();
  for (const tail of others) t.same(tail, first, 'every copy holds the same chain, to the same last entry');
  for (const server of servers) {
    const verified = server.server.services.audit.verify();
    t.ok(verified.ok, `a copy's chain verifies (${verified.entries} entries) ${JSON.stringify(verified.broken)}`);
  }
  const link = await ClusterLink.connect({ servers: nats.urls, namespace, nodeId: 'verifier' }, false);
  try {
    const walked = await verifyStreamAudit(link);
    t.equal(walked.ok, true, `the stream's chain verifies ${JSON.stringify(walked.broken)}`);
    t.equal(walked.entries, first!.seq, 'the stream holds every entry the copies hold');
  } finally {
    await link.close();
  }
  return first!.seq;
}

/** `gatehouse serve` in cluster mode, as a child process. */
function serveChild(t: Test, namespace: string, adminKey: string, nodeId: string, dataDir: string): Promise<ServeProcess> {
  const started = startServe(['--nats', nats.urls.join(','), '--nats-namespace', namespace, '--data-dir', dataDir, '--signatures', 'off', '--rate-sandbox', '100000/100000'], {
    GATEHOUSE_ADMIN_KEY: adminKey,
    GATEHOUSE_NODE_ID: nodeId,
  });
  started.then(
    (child) => t.teardown(() => stopChild(child)),
    () => {},
  );
  return started;
}

/** SIGTERM (a drain), SIGKILL if it is still there after 15 s; by PID, never by name. */
async function stopChild(child: ServeProcess): Promise<void> {
  if (child.child.exitCode !== null || child.child.signalCode !== null) return;
  child.child.kill('SIGTERM');
  const exited = await Promise.race([child.exited.then(() => true), sleep(15_000).then(() => false)]);
  if (!exited) {
    child.child.kill('SIGKILL');
    await child.exited;
  }
}

t.test('fault 1: a NATS server SIGKILLed under load, three times: no acknowledged decision or audit entry lost, writes resume', async (t) => {
  const { namespace, start } = clusterOf(t);
  const a = await start('a');
  const b = await start('b');
  const creator = await creatorOn(a, b);
  const load = steadyLoad({ instances: [instance('a', a), instance('b', b)], key: creator.key, clients: 4, pauseMs: 20, prefix: 'f1', writeTimeoutMs: WRITE_TIMEOUT_MS });
  const loadStarted = Date.now();
  const kills: Array<{ server: string; killedAt: number; restartedAt: number; backAt: number }> = [];
  try {
    t.ok(await load.answeredAfter(loadStarted, 20_000), 'writes are answered before any fault');
    for (const server of nats.servers) {
      await sleep(1000);
      const placed = await placement(namespace);
      const killedAt = Date.now();
      await server.kill('SIGKILL');
      t.comment(`SIGKILL ${server.name}; ${placed}`);
      const resumed = await load.answeredAfter(killedAt, 60_000).catch(() => null);
      t.ok(resumed, `writes resume with ${server.name} down (a write sent after the kill is answered 200)`);
      // A moment of writing on two servers, then the third rejoins and catches up.
      await sleep(1000);
      const restartedAt = Date.now();
      await server.start();
      const back = await load.answeredAfter(Date.now(), 60_000).catch(() => null);
      t.ok(back, `writes go on once ${server.name} has rejoined`);
      kills.push({ server: server.name, killedAt, restartedAt, backAt: back?.answer?.at ?? Date.now() });
    }
  } finally {
    await load.stop();
    await restoreNats();
  }
  const writes = load.writes;
  const loadEnded = Date.now();
  t.same(writes.filter((write) => !write.answer).map(summary), [], `every one of the ${writes.length} writes was answered 200 in the end (retried with its Idempotency-Key)`);
  for (const kill of kills) {
    const gap = longestGap(writes, kill.killedAt - 1000, kill.backAt);
    const alone = (name: string) => longestGap(writes.filter((write) => write.answer?.instance === name), kill.killedAt - 1000, kill.backAt).ms;
    t.comment(`${kill.server} SIGKILLed: longest gap in successful writes ${gap.ms} ms (A's answers alone ${alone('a')} ms, B's ${alone('b')} ms), starting ${gap.after - kill.killedAt} ms after the kill (restarted ${kill.restartedAt - kill.killedAt} ms after it)`);
  }
  const overall = longestGap(writes, loadStarted, loadEnded);
  t.comment(`longest gap in successful writes over ${kills.length} kills: ${overall.ms} ms (${writes.length} decisions, ${writes.filter((w) => w.attempts.length > 1).length} retried)`);

  checkExactlyOnce(t, 'on A', await listAllDecisions(a.url, creator.key), writes);
  checkExactlyOnce(t, 'on B', await listAllDecisions(b.url, creator.key), writes);
  await checkAudit(t, namespace, [a, b]);
});

t.test('fault 2: a Gatehouse instance SIGKILLed under load, its unanswered requests retried on the other: every decision exists exactly once', async (t) => {
  const { namespace, adminKey, start } = clusterOf(t);
  const b = await start('b');
  const aDir = tempDir(t);
  const a = await serveChild(t, namespace, adminKey, 'a', aDir);
  const creator = await creatorOn(b, a);
  const load = steadyLoad({ instances: [instance('a', a), instance('b', b)], key: creator.key, clients: 4, pauseMs: 10, prefix: 'f2', writeTimeoutMs: WRITE_TIMEOUT_MS });
  let killedAt = 0;
  let inFlightOnA = 0;
  try {
    // A has answered a good number of writes, and has some in flight, when it is killed.
    for (let i = 0; i < 400 && load.writes.filter((w) => w.answer?.instance === 'a').length < 30; i++) await sleep(25);
    for (let i = 0; i < 400 && load.inFlight('a') < 2; i++) await sleep(5);
    inFlightOnA = load.inFlight('a');
    a.child.kill('SIGKILL');
    killedAt = Date.now();
    t.same(await a.exited, { code: null, signal: 'SIGKILL' }, 'A is killed');
    t.ok(await load.answeredAfter(killedAt, 30_000).catch(() => null), 'writes go on through B');
    await sleep(1000);
  } finally {
    await load.stop();
  }
  const writes = load.writes;
  t.same(writes.filter((write) => !write.answer).map(summary), [], `every one of the ${writes.length} writes was answered 200 in the end`);
  const interrupted = writes.filter((write) => write.attempts.some((at) => at.instance === 'a' && at.status === null && at.sentAt < killedAt));
  const movedToB = writes.filter((write) => write.attempts[0]!.instance === 'a' && write.answer?.instance === 'b');
  t.ok(movedToB.length > 0, `writes sent to A were answered by B with their Idempotency-Key (${movedToB.length})`);
  const slowest = Math.max(0, ...interrupted.map((write) => write.answer!.at - killedAt));
  t.comment(`${inFlightOnA} requests in flight on A at the kill; ${interrupted.length} cut off and retried on B (${interrupted.filter((w) => w.answer?.replayed).length} replayed A's stored reply, ${interrupted.filter((w) => w.attempts.some((at) => at.code === 'idempotency_in_flight')).length} waited out A's claim; the last answered ${slowest} ms after the kill)`);
  checkExactlyOnce(t, 'on B', await listAllDecisions(b.url, creator.key), writes);

  await checkAudit(t, namespace, [b]);

  // A, restarted on its data directory, catches up and holds the same decisions, each once.
  const restarted = await serveChild(t, namespace, adminKey, 'a', aDir).catch((error: Error) => error);
  if (restarted instanceof Error) return t.fail(`A restarts on its data directory: ${restarted.message}`);
  checkExactlyOnce(t, 'on A restarted', await listAllDecisions(restarted.url, creator.key), writes);
  const status = await call(restarted.url, 'GET', '/v1/audit/status', { key: adminKey });
  t.equal(status.json?.ok, true, `A's copy of the chain verifies: ${status.text}`);
  await stopChild(restarted);
});

/** One request, once, waiting as long as the instance takes to answer. */
function tryOnce(server: TestServer, key: string, title: string, idempotencyKey?: string) {
  return postDecision(server.url, key, title, { ...(idempotencyKey ? { idempotencyKey } : {}), timeoutMs: 60_000 }).then((answered) => ({ title, ...answered }));
}

/** A and B, A attached only to the third NATS server (the one the tests cut off). */
async function splitPair(t: Test) {
  const { namespace, start } = clusterOf(t);
  const b = await start('b', nats.urls.slice(0, 2));
  const a = await start('a', [nats.urls[2]!]);
  const creator = await creatorOn(b, a);
  return { namespace, a, b, creator, cutOff: nats.servers[2]! };
}

/** Runs `during` with `server` SIGSTOPped, and continues it whatever happens. */
async function whileStopped<T>(server: NatsServer, during: () => Promise<T>): Promise<T> {
  await server.kill('SIGSTOP');
  try {
    return await during();
  } finally {
    await server.kill('SIGCONT');
    await nats.ready();
  }
}

t.test('fault 3: the NATS server an instance is attached to is cut off (SIGSTOP): it answers writes 503 not_ready, never diverges, and catches up', async (t) => {
  const { namespace, a, b, creator, cutOff } = await splitPair(t);
  const deadline = () => Date.now() + 30_000;
  const before = await createUntilAnswered([instance('a', a)], creator.key, 'f3-a-before', { first: 0, deadline: deadline() });
  t.equal(before.answer?.instance, 'a', 'A takes writes before the cut');
  const { onA, onB } = await whileStopped(cutOff, async () => {
    // B goes on writing through the two servers left (a leader election may come first), while
    // A is offered writes with an Idempotency-Key and without one.
    const onB = (async () => {
      const writes: Write[] = [];
      for (let i = 0; i < 10; i++) writes.push(await createUntilAnswered([instance('b', b)], creator.key, `f3-b-${i}`, { first: 0, deadline: deadline() }));
      return writes;
    })();
    const onA = await Promise.all([tryOnce(a, creator.key, 'f3-a-keyed', `f3-${randomBytes(6).toString('hex')}`), tryOnce(a, creator.key, 'f3-a-unkeyed')]);
    return { onA, onB: await onB };
  });
  t.comment(`A's answers while cut off: ${onA.map(({ title, status, ms, detail }) => `${title} ${status} after ${ms} ms (${detail})`).join('; ')}`);
  t.same(onA.map(({ status, code, contentType }) => ({ status, code, contentType })), onA.map(() => ({ status: 503, code: 'not_ready', contentType: 'application/problem+json' })), 'A refuses every write while cut off: 503 not_ready, problem+json');
  t.same(onB.filter((write) => !write.answer).map(summary), [], 'B takes every write meanwhile');

  const lastOfB = onB.at(-1)!.answer!.id;
  t.equal(await readWithin(a, creator.key, `/v1/decisions/${lastOfB}`, 30_000), 200, 'A, back in touch, reads what B wrote meanwhile');
  const after = await createUntilAnswered([instance('a', a)], creator.key, 'f3-a-after', { first: 0, deadline: deadline() });
  t.equal(after.answer?.instance, 'a', 'A takes writes again');

  // A's unacknowledged commits reach the cluster only after SIGCONT, expecting the sequence A had
  // reached before the cut; B's writes have moved the stream past it, so none can be stored.
  const refused = new Set(onA.map(({ title }) => title));
  for (const [name, server] of [['A', a], ['B', b]] as const) {
    const listed = await listAllDecisions(server.url, creator.key);
    checkExactlyOnce(t, `on ${name}`, listed.filter(({ title }) => !refused.has(title)), [before, after, ...onB]);
    t.same(listed.filter(({ title }) => refused.has(title)), [], `on ${name}: no write A answered 503 exists`);
  }
  await checkAudit(t, namespace, [a, b]);
});

t.test('fault 4: the whole NATS cluster restarted: state, audit chain and stream cursors survive', async (t) => {
  const { namespace, start } = clusterOf(t);
  const a = await start('a');
  let b = await start('b');
  const creator = await creatorOn(a);
  // B knows the creator's key once it has applied A's commits.
  for (let i = 0; i < 500 && b.server.services.store.applied < a.server.services.store.applied; i++) await sleep(10);
  // Decisions are created through A and B in turn, so B restarts on memory both instances wrote.
  const writeSome = async (prefix: string, count: number) => {
    const writes: Write[] = [];
    for (let i = 0; i < count; i++) {
      writes.push(await createUntilAnswered([instance('a', a), instance('b', b)], creator.key, `${prefix}-${i}`, { first: i % 2, deadline: Date.now() + 60_000 }));
    }
    return writes;
  };

  const subscriber = await openStream(t, a.url, creator.key);
  subscriber.send({ type: 'subscribe', topics: ['decisions'] });
  await subscriber.next((m) => m.type === 'subscribed');
  const [seen] = await writeSome('f4-seen', 1);
  const lastSeen = await subscriber.next((m) => m.type === 'event' && m.topic === `decisions/${seen!.answer!.id}`);
  await subscriber.close();
  const beforeRestart = await writeSome('f4-before', 6);
  const entriesBefore = await checkAudit(t, namespace, [a, b]);

  // B stops with the cluster and starts again after it; A runs throughout.
  await b.server.close();
  try {
    await Promise.all(nats.servers.map((server) => server.stop()));
    t.ok(nats.servers.every((server) => server.state() === 'gone'), 'every NATS server has stopped');
  } finally {
    await restoreNats();
  }
  b = await start('b', nats.urls, b.dataDir);
  const afterRestart = await writeSome('f4-after', 6);
  const written = [seen!, ...beforeRestart, ...afterRestart];
  t.same(written.filter((write) => !write.answer).map(summary), [], 'every write is answered 200, before and after the restart');

  for (const [name, server] of [['A', a], ['B', b]] as const) checkExactlyOnce(t, `on ${name}`, await listAllDecisions(server.url, creator.key), written);
  const entriesAfter = await checkAudit(t, namespace, [a, b]);
  t.ok(entriesAfter > entriesBefore, `the chain goes on from the ${entriesBefore} entries it held before the restart (${entriesAfter} now)`);

  // A subscriber that last saw `lastSeen` on A resumes on B (restarted) with exactly what it missed.
  const resumed = await openStream(t, b.url, creator.key);
  resumed.send({ type: 'subscribe', topics: ['decisions'], since: lastSeen.cursor });
  await resumed.next((m) => m.type === 'subscribed');
  const missed = [...beforeRestart, ...afterRestart].map((write) => `decisions/${write.answer?.id}`);
  await resumed.next((m) => m.type === 'event' && m.topic === missed.at(-1)).catch(() => null);
  const events = resumed.messages.filter((m) => m.type === 'event');
  t.same(events.map((m) => m.topic), missed, 'exactly the events missed, across the restart, in order');
  t.notOk(events.some((m) => m.cursor <= lastSeen.cursor), 'nothing at or before the cursor again');
  t.equal(new Set(events.map((m) => m.cursor)).size, events.length, 'no event twice');
  await resumed.close();
});
