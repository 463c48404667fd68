/**
 * The lean clustered floor: the governed work of `POST /v1/decisions` as the lean governed floor
 * does it (bench/lib/governed-floor.ts: key by SHA-256, TypeBox check, decision-gate-v1 through
 * `@open-policy-agent/opa-wasm`, decision and hash-chained audit entry in LMDB, the stored bytes as
 * the reply), replicated the way cluster mode must at least replicate it, with the least code and
 * none of Gatehouse's classes:
 *
 * - once per event-loop turn (one batch in flight at a time), the turn's decisions and audit
 *   entries are published as one message to the commit stream, with the last sequence this
 *   process has applied as the expected last sequence (the compare-and-set that keeps one order);
 * - a refusal (another process's commit came first) waits for this process's ordered consumer to
 *   apply up to the sequence the stream named, chains the batch again behind the new tail and
 *   publishes it again;
 * - acknowledged, the batch is committed to LMDB and answered; the consumer applies the other
 *   processes' commits (and skips its own) to LMDB in order.
 *
 * It leaves out what the lean governed floor leaves out, and everything of cluster mode beyond
 * that: events and memory in the write set (a decision's write set is its record and its audit
 * entry, about a third of Gatehouse's), idempotency claims, the policy census, publish retries
 * and deadlines, and recovery of a stalled consumer.
 *
 * Mode `apply-order` (the fifth argument; `cas` by default) is the other design the order can
 * take: a batch is published once, with no expected last sequence, so no publish is ever refused
 * or made again; every process links the audit chain as it applies the stream in order, its own
 * commits included (their decisions it stored when the publish was acknowledged). Cluster mode
 * does not work this way: this measures what it would gain (docs/cluster.md).
 *
 * Run as a child process: `node --import=./scripts/register-typescript.js bench/lib/cluster-floor.ts
 * <workDir> <nats URLs> <stream> <node> [cas|apply-order]`; it prints `listening on <url> <authorization>`.
 */
import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { connect } from '@nats-io/transport-node';
import { DeliverPolicy, jetstream, jetstreamManager, JetStreamApiError, StorageType } from '@nats-io/jetstream';
import { open } from 'lmdb';
import { pack, unpack } from 'msgpackr';
import { listenUws } from './baseline-servers.ts';
import { COMMIT_NOW, floorApp, floorDecider, GENESIS, linkEntries, loadFloorPolicy, sha256Hex, type FloorTail, type Pending, type Principal } from './governed-floor.ts';

/**
 * A commit as published: [decision id, record, audit entry] per decision, the entry as stored
 * (`cas`) or its head, which the applying process chains (`apply-order`, with the publisher's node).
 */
type Commit = Array<[string, Uint8Array, string]>;

const [workDir, urls, stream, node, mode = 'cas'] = process.argv.slice(2);
if (!workDir || !urls || !stream || !node || (mode !== 'cas' && mode !== 'apply-order')) {
  throw new Error('usage: cluster-floor.ts <workDir> <nats URLs> <stream> <node> [cas|apply-order]');
}
const dir = mkdtempSync(path.join(workDir, `cluster-floor-${node}-`));
const { policy, moduleHash, checkBody } = await loadFloorPolicy(dir);
const root = open({ path: path.join(dir, 'floor.mdb'), maxDbs: 2, noSync: true });
const decisions = root.openDB<Uint8Array, string>({ name: 'decisions', encoding: 'binary' });
const audit = root.openDB<string, number>({ name: 'audit', encoding: 'string' });

const nc = await connect({ servers: urls.split(','), maxReconnectAttempts: -1 });
const subject = `${stream.toLowerCase()}.commits`;
const jsm = await jetstreamManager(nc);
await jsm.streams.add({ name: stream, subjects: [subject], num_replicas: nc.info?.cluster ? 3 : 1, storage: StorageType.File }).catch(() => {});
const js = jetstream(nc);

// Every process of one floor shares its one key: the secret is derived from the stream's name.
const secret = sha256Hex(`cluster-floor:${stream}`);
const keys = new Map<string, Principal>([[sha256Hex(secret), { env: 'sandbox', keyId: 'key_floor', roles: [], scopes: ['decisions:write'] }]]);

let applied = 0;
let tail: FloorTail = { seq: 0, hash: GENESIS };
let waiting: { seq: number; resolve(): void } | null = null;
let answered = 0;

/** Stores a commit (this process's or another's) as stream sequence `streamSeq`. */
function store(commit: Commit, streamSeq: number, next: FloorTail, withDecisions = true): void {
  root.transactionSync(() => {
    let seq = tail.seq;
    for (const [id, decision, entry] of commit) {
      audit.putSync(++seq, entry);
      if (withDecisions) decisions.putSync(id, decision);
    }
  }, COMMIT_NOW);
  applied = streamSeq;
  tail = next;
  if (waiting && applied >= waiting.seq) waiting.resolve();
}

/** `apply-order`: chains a commit's entries behind the tail and stores them (with the decisions of another process's). */
function chainAndStore(from: string, heads: Commit, streamSeq: number): void {
  const linked = linkEntries(tail, heads.map(([decisionId, decision, entryHead]) => ({ decisionId, decision, entryHead })));
  store(linked.entries, streamSeq, linked.tail, from !== node);
}

// Applies every commit in the stream's order; with `cas`, this process's own are applied on their acknowledgement.
void (async () => {
  const consumer = await js.consumers.get(stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: 1 });
  for await (const message of await consumer.consume()) {
    if (message.seq <= applied) continue;
    if (mode === 'apply-order') {
      const [from, heads] = unpack(message.data) as [string, Commit];
      chainAndStore(from, heads, message.seq);
      continue;
    }
    const commit = unpack(message.data) as Commit;
    const last = commit.at(-1);
    store(commit, message.seq, last ? { seq: tail.seq + commit.length, hash: (JSON.parse(last[2]) as { hash: string }).hash } : tail);
  }
})();

/** `apply-order`: publishes the batch once, stores its decisions on the acknowledgement; the consumer chains its audit entries. */
async function publishInApplyOrder(batch: readonly Pending[]): Promise<void> {
  await js.publish(subject, pack([node, batch.map((pending) => [pending.decisionId, pending.decision, pending.entryHead])]));
  root.transactionSync(() => {
    for (const pending of batch) decisions.putSync(pending.decisionId, pending.decision);
  }, COMMIT_NOW);
}

let queue: Pending[] = [];
let inFlight = false;
async function commitQueued(): Promise<void> {
  const batch = queue;
  queue = [];
  inFlight = true;
  try {
    if (mode === 'apply-order') await publishInApplyOrder(batch);
    else for (;;) {
      const base = applied;
      const linked = linkEntries(tail, batch);
      try {
        const ack = await js.publish(subject, pack(linked.entries), { expect: { lastSequence: base } });
        if (ack.seq > applied) store(linked.entries, ack.seq, linked.tail);
        break;
      } catch (error) {
        const named = error instanceof JetStreamApiError ? /wrong last sequence: (\d+)/.exec(error.message) : null;
        if (!named) throw error;
        const seq = Number(named[1]);
        if (applied < seq) await new Promise<void>((resolve) => (waiting = { seq, resolve }));
      }
    }
    answered += batch.length;
    for (const pending of batch) pending.answer('200 OK', pending.decision);
  } catch (error) {
    for (const pending of batch) pending.answer('503 Service Unavailable', JSON.stringify({ detail: String(error) }));
  } finally {
    inFlight = false;
    if (mode === 'cas' && queue.length) setImmediate(() => void commitQueued());
  }
}

let lastId = 0;
const decide = floorDecider(policy, moduleHash, () => `${Date.now().toString(36)}${node}${(++lastId).toString(36).padStart(6, '0')}`, (pending) => {
  queue.push(pending);
  // `cas` keeps one batch in flight (the next must chain behind it); `apply-order` publishes each turn's at once.
  if ((mode === 'apply-order' || !inFlight) && queue.length === 1) setImmediate(() => void commitQueued());
});
const app = floorApp(keys, checkBody, decide);
// The cluster scenario counts the decisions answered from the counter Gatehouse exposes.
app.get('/metrics', (res) => {
  res.end(`gatehouse_http_requests_total{method="POST",route="/v1/decisions",status="200"} ${answered}\n`);
});
const server = await listenUws(app, 'cluster floor');
console.log(`listening on ${server.origin} Bearer ${secret}`);
process.once('SIGTERM', () => {
  void (async () => {
    await server.close();
    await nc.close();
    await root.close();
    process.exit(0);
  })();
});
