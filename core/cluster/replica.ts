import { setTimeout as sleep } from 'node:timers/promises';
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import { log } from '../log.ts';
import { QUEUE_DATABASE } from '../webhooks/deliveries.ts';
import { CommitConflict, type CommitReplication, type Store } from '../store.ts';
import { MAX_COMMIT_BYTES, PUBLISH_DEADLINE_MS, PUBLISH_RETRY_MS, PUBLISH_TIMEOUT_MS, type ClusterLink } from './cluster-link.ts';
import { ClusterClaims } from './shared-claims.ts';
import { consumeLoop, type ConsumeLoop } from './consume-loop.ts';
import { ClusterDeliveries } from './webhook-work.ts';
import { decodeCommit, encodeCommit, type WriteOp } from './write-set.ts';

/** How long an instance waits to reach the cluster's last commit before it answers `not_ready`. */
const CATCH_UP_DEADLINE_MS = 10_000;
/**
 * How long a writer that lost the race waits for the commits that came first before it reads the
 * stream again: they are normally a few milliseconds away, and a reader that missed a leader
 * change is better replaced at once than waited for.
 */
const CONFLICT_CATCH_UP_MS = 2000;

/**
 * This instance's copy of the cluster's state: its LMDB, kept current by applying the commit
 * stream in order, and the publisher of its own commits (core/store.ts works each batch out,
 * this class gets it into the stream). Reads stay local; a write is answered once the stream
 * has it and it is applied here, so a caller reads its own writes on this instance at once and on
 * the others as soon as they have applied the stream that far (docs/cluster.md).
 */
export class Replica implements CommitReplication {
  private reader: ConsumeLoop | null = null;
  private waiters: Array<{ seq: number; resolve(): void }> = [];
  private published = 0;
  /** Idempotency-Keys in flight across the cluster. */
  readonly claims: ClusterClaims;
  /** Webhook deliveries shared out among the instances. */
  readonly deliveries: ClusterDeliveries;

  private constructor(
    private readonly store: Store,
    readonly link: ClusterLink,
  ) {
    this.claims = new ClusterClaims(link, this);
    this.deliveries = new ClusterDeliveries(link, this);
    // Whatever applies a commit wakes those waiting for it, not only the next message to arrive.
    store.onReplicated(() => this.wake());
  }

  /**
   * Joins `store` to the cluster: checks that its data belongs to this cluster's stream (or
   * that it is empty), applies every commit it has not seen, then keeps applying them as they
   * come.
   */
  static async start(store: Store, link: ClusterLink): Promise<Replica> {
    const replica = new Replica(store, link);
    const info = await link.info();
    store.joinCluster(replica, `${link.stream}@${info.created}`, link.nodeId);
    log.info({ nodeId: link.nodeId, stream: link.stream, replicas: info.config.num_replicas, server: link.nc.getServer(), applied: store.applied }, 'joined the cluster');
    const behind = info.state.last_seq - store.applied;
    if (behind > 0) log.info({ from: store.applied + 1, to: info.state.last_seq }, 'catching up with the cluster');
    replica.read();
    await replica.waitApplied(info.state.last_seq, CATCH_UP_DEADLINE_MS + behind);
    return replica;
  }

  /** NATS's message size limit (its `max_payload`), less room for the message's own framing. */
  get maxBytes(): number {
    return Math.min(this.link.nc.info?.max_payload ?? MAX_COMMIT_BYTES, MAX_COMMIT_BYTES) - 4096;
  }

  async publish(ops: WriteOp[], base: number): Promise<number> {
    const data = encodeCommit({ node: this.link.nodeId, ops });
    const queues = ops.some((op) => op[0] === QUEUE_DATABASE && op.length === 3);
    const subject = queues ? this.link.subjects.deliveries : this.link.subjects.writes;
    // Offered again after a timeout under the same id, the stream keeps one copy: a commit
    // whose acknowledgement was lost is not written twice.
    const msgID = `${this.link.nodeId}:${Date.now().toString(36)}:${++this.published}`;
    const deadline = Date.now() + PUBLISH_DEADLINE_MS;
    for (;;) {
      try {
        const ack = await this.link.js.publish(subject, data, { msgID, expect: { lastSequence: base }, timeout: PUBLISH_TIMEOUT_MS });
        return ack.seq;
      } catch (error) {
        if (error instanceof JetStreamApiError && (error.code === JetStreamApiCodes.StreamWrongLastSequence || error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)) {
          const named = /wrong last sequence: (\d+)/.exec(error.message);
          throw new CommitConflict(error.message, named ? Number(named[1]) : null);
        }
        if (error instanceof JetStreamApiError || Date.now() > deadline) throw error;
        await sleep(PUBLISH_RETRY_MS);
      }
    }
  }

  async catchUp(seq: number | null = null): Promise<void> {
    const through = seq ?? (await this.link.info()).state.last_seq;
    try {
      await this.waitApplied(through, seq === null ? CATCH_UP_DEADLINE_MS : CONFLICT_CATCH_UP_MS);
    } catch (error) {
      // The stream has commits this instance is not being given: read it again from the first
      // one not applied (an ordered consumer that missed a leader change, say).
      log.warn({ applied: this.store.applied, through }, 'the commit stream stalled; reading it again');
      this.reader?.reopen();
      throw error;
    }
  }

  /** Stops applying the stream; call before the store closes (its last commits are still published). */
  async stopReading(): Promise<void> {
    await this.reader?.stop();
  }

  /** Leaves the cluster; call once the store is closed. */
  async disconnect(): Promise<void> {
    await this.link.close();
  }

  /** Resolves once this instance has applied commit `seq`; rejects after `timeoutMs`. */
  waitApplied(seq: number, timeoutMs: number): Promise<void> {
    if (this.store.applied >= seq) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((waiter) => waiter !== entry);
        reject(new Error(`this instance has applied the cluster's commits through ${this.store.applied}, not yet ${seq}`));
      }, timeoutMs);
      const entry = {
        seq,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      this.waiters.push(entry);
    });
  }

  /** Applies the stream from the first commit not applied here, for as long as the replica runs. */
  private read(): void {
    this.reader = consumeLoop(
      'reading the commit stream',
      () => this.link.commitsFrom(this.store.applied + 1),
      (message) => {
        if (message.seq > this.store.applied) {
          const { node, ops } = this.commitOf(message.seq, message.data);
          this.store.applyReplicated(message.seq, ops, node);
        }
        this.wake();
      },
      250,
    );
  }

  /**
   * A commit's writes and its maker. A message on the stream that is not a commit (published there by hand)
   * writes nothing here, as on every other instance, so the copies stay the same; it is logged,
   * and `audit verify --nats` names it.
   */
  private commitOf(seq: number, data: Uint8Array): { node: string | null; ops: WriteOp[] } {
    try {
      return decodeCommit(data);
    } catch (error) {
      log.error({ commit: seq, err: error }, 'the commit stream holds a message that is not a commit; it writes nothing');
      return { node: null, ops: [] };
    }
  }

  private wake(): void {
    if (this.waiters.length === 0) return;
    const applied = this.store.applied;
    const ready = this.waiters.filter((waiter) => waiter.seq <= applied);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((waiter) => waiter.seq > applied);
    for (const waiter of ready) waiter.resolve();
  }
}
