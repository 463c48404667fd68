import type { Database } from 'lmdb';
import type { EventLog } from '../events/event-log.ts';
import type { StoredEvent } from '../events/event.ts';
import type { Store } from '../store.ts';
import { newDelivery, type DeliveryStore } from './deliveries.ts';
import { subscribes, type EndpointStore, type WebhookEndpoint } from './endpoint.ts';
import { webhookPayload } from './payload.ts';

/**
 * Turns events into deliveries. The event log is the durable outbox: an event is committed with
 * the call that caused it, in one transaction. The fan-out reads the log behind its own cursor
 * and, in one transaction per batch, queues a delivery for every endpoint that asked for each
 * event and advances the cursor. A crash between the two leaves the cursor behind, and the batch
 * is fanned out again, once; events written by other processes (the CLI) are picked up the
 * same way.
 */
const CURSOR = 'webhook-fanout-cursor';
const BATCH = 500;

export class FanOut {
  private readonly meta: Database<number, string>;
  private running: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly store: Store,
    private readonly events: EventLog,
    private readonly endpoints: EndpointStore,
    private readonly deliveries: DeliveryStore,
  ) {
    this.meta = store.database<number, string>('meta');
  }

  /** Every event up to this cursor has been fanned out. */
  position(): number {
    return this.meta.get(CURSOR) ?? 0;
  }

  /**
   * Called when the first endpoint is created (inside its transaction): with no endpoint before
   * it, nothing before now can be owed to anyone, so the fan-out need not read that history.
   */
  skipToHeadInTransaction(): void {
    if (this.endpoints.isEmpty()) this.meta.put(CURSOR, this.events.head());
  }

  /** Fans out everything committed so far; concurrent calls coalesce into one more pass. */
  run(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        while (await this.batch());
      } while (this.again);
    })().finally(() => (this.running = null));
    return this.running;
  }

  /** Resolves once no pass is running (for shutdown, before the store closes). */
  async settled(): Promise<void> {
    await this.running?.catch(() => {});
  }

  /** One batch; resolves to whether there may be more. */
  private async batch(): Promise<boolean> {
    // Without endpoints nothing is owed; the first endpoint moves the cursor (skipToHeadInTransaction).
    if (this.endpoints.isEmpty()) return false;
    const from = this.position();
    const batch = this.events.after(from, BATCH);
    if (batch.length === 0) return false;
    await this.store.commit(() => {
      if (this.position() !== from) return;
      const endpoints = this.endpoints.all().filter((e) => e.enabled);
      for (const event of batch) for (const endpoint of endpoints) if (owed(endpoint, event)) this.enqueue(endpoint, event);
      this.meta.put(CURSOR, batch.at(-1)!.cursor);
    });
    return batch.length === BATCH;
  }

  private enqueue(endpoint: WebhookEndpoint, event: StoredEvent): void {
    this.deliveries.enqueueInTransaction(
      newDelivery({
        endpointId: endpoint.id,
        env: endpoint.env,
        messageId: event.id,
        kind: event.kind,
        cursor: event.cursor,
        payload: webhookPayload(event.kind, event.time, event.dataJson, { cursor: event.cursor, topic: event.topic }),
      }),
    );
  }
}

function owed(endpoint: WebhookEndpoint, event: StoredEvent): boolean {
  return endpoint.env === event.env && event.cursor > endpoint.sinceCursor && subscribes(endpoint, event.kind);
}
