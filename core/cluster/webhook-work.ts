import { AckPolicy, DeliverPolicy, type JsMsg } from '@nats-io/jetstream';
import { log } from '../log.ts';
import { QUEUE_DATABASE } from '../webhooks/deliveries.ts';
import type { Dispatcher } from '../webhooks/dispatcher.ts';
import type { SharedDeliveries } from '../webhooks/webhooks.ts';
import type { ClusterLink } from './cluster-link.ts';
import type { Replica } from './replica.ts';
import { consumeLoop, type ConsumeLoop } from './consume-loop.ts';
import { decodeCommit } from './write-set.ts';

/**
 * How long an instance may hold a commit's deliveries without a sign of life before another
 * takes them: it signals before each attempt, so two attempts' bounds and a margin.
 */
function ackWaitMs(attemptTimeoutMs: number): number {
  return 2 * attemptTimeoutMs + 5000;
}
/** How long an instance waits to have applied the commit it was handed. */
const APPLY_WAIT_MS = 10_000;

/**
 * Webhook deliveries shared out among the instances of a cluster by one durable JetStream
 * consumer on the commit stream (AckExplicit, shared by every instance): a commit that queues
 * deliveries is published on its own subject and handed to exactly one instance, which attempts
 * them in order (one endpoint's deliveries still go out oldest first, core/webhooks/) and
 * acknowledges the commit once none is left pending. A delivery waiting out its backoff is
 * handed back with that delay (a negative acknowledgement with a delay), so any instance may
 * make the next attempt. An instance that dies holding a commit stops signalling progress, and
 * after `ackWaitMs` the consumer hands the commit to another: its deliveries are retried
 * there, at least once in all (receivers deduplicate by `webhook-id`, as Standard Webhooks asks).
 */
export class ClusterDeliveries implements SharedDeliveries {
  private reader: ConsumeLoop | null = null;
  private readonly handling = new Set<Promise<void>>();
  /** Deliveries this instance is attempting now: a second copy of the same work waits. */
  private readonly attempting = new Set<string>();
  private stopped = false;

  constructor(
    private readonly link: ClusterLink,
    private readonly replica: Replica,
  ) {}

  start(dispatcher: Dispatcher, attemptTimeoutMs: number): void {
    const durable = `${this.link.namespace}_webhooks`;
    const ackWait = ackWaitMs(attemptTimeoutMs);
    this.reader = consumeLoop(
      'reading the shared webhook work',
      async () => {
        await this.ensureConsumer(durable, ackWait);
        const consumer = await this.link.js.consumers.get(this.link.stream, durable);
        return consumer.consume({ max_messages: 64 });
      },
      (message) => {
        const handled = this.handle(dispatcher, message).catch((error: unknown) => {
          log.error({ err: error, commit: message.seq }, 'webhook deliveries could not be attempted; handed back');
          message.nak(1000);
        });
        this.handling.add(handled);
        void handled.finally(() => this.handling.delete(handled));
      },
      500,
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.reader?.stop();
    await Promise.allSettled(this.handling);
  }

  /** Creates the shared consumer, or finds it: adding one with the same configuration is idempotent. */
  private async ensureConsumer(durable: string, ackWait: number): Promise<void> {
    await this.link.jsm.consumers.add(this.link.stream, {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      ack_wait: ackWait * 1e6,
      deliver_policy: DeliverPolicy.All,
      filter_subject: this.link.subjects.deliveries,
      max_deliver: -1,
    });
  }

  /** Attempts every delivery the commit queued that is due; acknowledges it once none is pending. */
  private async handle(dispatcher: Dispatcher, message: JsMsg): Promise<void> {
    await this.replica.waitApplied(message.seq, APPLY_WAIT_MS);
    let wait = Infinity;
    for (const [endpointId, deliveryId] of queuedDeliveries(message.data)) {
      const key = `${endpointId}\u0000${deliveryId}`;
      if (this.attempting.has(key)) {
        wait = Math.min(wait, 1000);
        continue;
      }
      this.attempting.add(key);
      try {
        for (;;) {
          if (this.stopped) return message.nak();
          const outcome = await dispatcher.step(endpointId, deliveryId, () => message.working());
          if (outcome.kind === 'idle') break;
          if (outcome.kind === 'wait') {
            wait = Math.min(wait, outcome.ms);
            break;
          }
        }
      } finally {
        this.attempting.delete(key);
      }
    }
    // The soonest of the waits: a delivery not due by then is handed back again, unattempted.
    if (wait < Infinity) message.nak(Math.max(wait, 100));
    else message.ack();
  }
}

/** The deliveries a commit queued: [endpointId, deliveryId] pairs. */
function queuedDeliveries(data: Uint8Array): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const op of decodeCommit(data).ops) {
    if (op[0] !== QUEUE_DATABASE || op.length !== 3) continue;
    const key = op[1];
    if (Array.isArray(key) && typeof key[0] === 'string' && typeof key[1] === 'string') out.push([key[0], key[1]]);
  }
  return out;
}
