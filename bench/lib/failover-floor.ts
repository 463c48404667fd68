/**
 * The failover floor: what JetStream itself allows. Two NATS connections (one per "instance",
 * each given the servers in another order) publish to a 3-replica stream at a steady rate, each
 * message a compare-and-set on the last sequence its publisher saw, as Gatehouse's commits are
 * (core/cluster/replica.ts): a lost race learns the sequence from the refusal and goes again, a
 * publish that times out is offered again under the same message id after 100 ms, until the
 * same deadline Gatehouse gives a commit. There is no HTTP, no LMDB and no governed work, so the
 * longest stretch without a successful publish while the stream's leader is killed is the time
 * the cluster itself needs to elect a new leader and take writes again: the floor under
 * Gatehouse's failover gap in the same run.
 *
 * Each publish that ended is recorded as a steady load's request is (bench/lib/steady-load.ts):
 * status 200 when the stream took it, 503 when it gave up, so the same gap measure applies.
 */
import { performance } from 'node:perf_hooks';
import { JetStreamApiError, jetstream, jetstreamManager, StorageType } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
// Gatehouse's commit publisher's own timeout, deadline and pause (core/cluster/replica.ts).
import { PUBLISH_DEADLINE_MS, PUBLISH_RETRY_MS, PUBLISH_TIMEOUT_MS } from '../../core/cluster/cluster-link.ts';
import { startDueTicker, type DueTicker } from './due-ticker.ts';
import type { Completion, SteadyLoad } from './steady-load.ts';

/** About a decision's commit: its record and its audit entry, encoded. */
const PAYLOAD_BYTES = 1500;
/** Publishes waiting on the stream at once, per connection, beyond which due ones wait their turn. */
const MAX_IN_FLIGHT = 64;
const MAX_DURATION_MS = 3_600_000;

export interface FailoverFloor {
  /** The stream's name, for finding its leader. */
  stream: string;
  /** Starts the steady publishing at `rate` messages per second (both connections together). */
  start(rate: number): SteadyLoad;
  close(): Promise<void>;
}

/** Connects to `urls` and creates `stream` (3 replicas) for the floor to publish to. */
export async function openFailoverFloor(urls: string[], stream: string): Promise<FailoverFloor> {
  const connections: NatsConnection[] = [];
  try {
    for (const servers of [urls, [...urls].reverse()]) connections.push(await connect({ servers, name: `failover-floor-${connections.length + 1}` }));
    const jsm = await jetstreamManager(connections[0]!, { timeout: PUBLISH_TIMEOUT_MS * 2 });
    await jsm.streams.add({ name: stream, subjects: [`${stream}.commits`], num_replicas: 3, storage: StorageType.File });
  } catch (error) {
    await Promise.all(connections.map((nc) => nc.close()));
    throw error;
  }
  const publishers = connections.map((nc) => jetstream(nc, { timeout: PUBLISH_TIMEOUT_MS }));
  const subject = `${stream}.commits`;
  const payload = new Uint8Array(PAYLOAD_BYTES);

  return {
    stream,
    start(rate) {
      const completions: Completion[] = [];
      const inFlight = [0, 0];
      const pending = new Set<Promise<void>>();
      let last = 0;
      let sent = 0;
      let stopped = false;

      const publish = async (target: number, due: number): Promise<void> => {
        const msgID = `${target}:${++sent}`;
        const deadline = performance.now() + PUBLISH_DEADLINE_MS;
        let status = 503;
        for (;;) {
          try {
            const ack = await publishers[target]!.publish(subject, payload, { msgID, expect: { lastSequence: last } });
            last = Math.max(last, ack.seq);
            status = 200;
            break;
          } catch (error) {
            const named = error instanceof JetStreamApiError ? /wrong last sequence: (\d+)/.exec(error.message) : null;
            if (named) {
              last = Math.max(last, Number(named[1]));
              continue;
            }
            if (stopped || error instanceof JetStreamApiError || performance.now() > deadline) break;
            await new Promise((resolve) => setTimeout(resolve, PUBLISH_RETRY_MS));
          }
        }
        completions.push({ target, due, at: performance.now(), status });
      };

      let ticker: DueTicker | null = null;
      const dispatch = () => {
        if (stopped || !ticker) return;
        const dueNow = Math.floor((performance.now() - ticker.start) / intervalMs) + 1;
        for (; dispatched < dueNow; dispatched++) {
          const target = dispatched % 2;
          // Beyond the bound a due publish is skipped rather than queued: a stall shows as a gap either way.
          if (inFlight[target]! >= MAX_IN_FLIGHT) continue;
          inFlight[target]!++;
          const running: Promise<void> = publish(target, ticker.start + dispatched * intervalMs).finally(() => {
            inFlight[target]!--;
            pending.delete(running);
          });
          pending.add(running);
        }
      };
      const intervalMs = 1000 / rate;
      let dispatched = 0;
      const started = startDueTicker(intervalMs, MAX_DURATION_MS, dispatch).then((schedule) => {
        ticker = schedule;
        dispatch();
      });

      return {
        completions,
        async stop() {
          stopped = true;
          await started;
          await ticker?.stop();
          await Promise.all(pending);
          return completions;
        },
      };
    },
    async close() {
      await Promise.all(connections.map((nc) => nc.close()));
    },
  };
}
