import type { Database } from 'lmdb';
import type { Env } from '../env.ts';
import { GatehouseError } from '../errors.ts';
import { sortableId } from '../ids.ts';
import { readRange } from '../range-read.ts';
import type { Store } from '../store.ts';

/**
 * The webhook outbox: one delivery per (endpoint, message), with every attempt made and what
 * came of it. Deliveries are kept per endpoint in the order of their sortable ids (the order they
 * were queued); `webhook-queue` indexes the pending ones, so an endpoint's next delivery is the first
 * key of its queue range. Keeping that order is what makes delivery ordered per endpoint: the
 * dispatcher never starts a delivery before the one ahead of it is delivered or given up.
 */
export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface Attempt {
  at: string;
  /** The receiver's HTTP status, or null when there was no response (refused, timed out). */
  status: number | null;
  latencyMs: number;
  /** Why it failed without a response. */
  error: string | null;
  /** The start of the response body, at most 1 KiB. */
  response: string | null;
}

export interface Delivery {
  /** `dlv_…`, sortable by creation: an endpoint's deliveries are kept and sent in id order. */
  id: string;
  endpointId: string;
  env: Env;
  /** The `webhook-id` header: the event's id, the same on every retry and replay. */
  messageId: string;
  kind: string;
  /** The event's cursor; null for a test message. */
  cursor: number | null;
  /** The exact bytes signed and sent. */
  payload: string;
  status: DeliveryStatus;
  attempts: Attempt[];
  /** When the next attempt is due (pending deliveries only). */
  nextAttemptAt: string | null;
  createdAt: string;
  /** The delivery this one replays. */
  replayOf: string | null;
}

export type DeliveryDraft = Pick<Delivery, 'endpointId' | 'env' | 'messageId' | 'kind' | 'cursor' | 'payload'> & { replayOf?: string };

type Key = [string, string];

/** Every key of one endpoint: [endpointId, …] sorts after [endpointId] and before [endpointId + NUL]. */
function range(endpointId: string): { start: Key | [string]; end: [string] } {
  return { start: [endpointId], end: [`${endpointId}\u0000`] };
}

/** A new pending delivery, due now; store it with `enqueueInTransaction`. */
export function newDelivery(draft: DeliveryDraft, now = Date.now()): Delivery {
  const at = new Date(now).toISOString();
  return Object.assign({}, draft, { id: sortableId('dlv_'), replayOf: draft.replayOf ?? null, status: 'pending' as const, attempts: [], nextAttemptAt: at, createdAt: at });
}

/** The database of pending deliveries: a commit that writes to it queues work (core/cluster/webhook-work.ts). */
export const QUEUE_DATABASE = 'webhook-queue';

export class DeliveryStore {
  private readonly deliveries: Database<Delivery, Key>;
  private readonly queue: Database<true, Key>;

  constructor(store: Store) {
    this.deliveries = store.database<Delivery, Key>('webhook-deliveries');
    this.queue = store.database<true, Key>(QUEUE_DATABASE);
  }

  /** Queues a delivery behind the endpoint's others; call inside `store.commit`. */
  enqueueInTransaction(delivery: Delivery): void {
    this.deliveries.put([delivery.endpointId, delivery.id], delivery);
    this.queue.put([delivery.endpointId, delivery.id], true);
  }

  /** Stores a delivery after an attempt; a finished one leaves the queue. Call inside `store.commit`. */
  updateInTransaction(delivery: Delivery): void {
    this.deliveries.put([delivery.endpointId, delivery.id], delivery);
    if (delivery.status !== 'pending') this.queue.remove([delivery.endpointId, delivery.id]);
  }

  /** The endpoint's next pending delivery: the oldest. */
  head(endpointId: string): Delivery | undefined {
    for (const key of this.queue.getKeys(Object.assign({}, range(endpointId), { limit: 1 }))) return this.deliveries.get(key);
    return undefined;
  }

  /** Endpoints with pending deliveries: one seek per endpoint, however long their queues. */
  queuedEndpoints(): string[] {
    const out: string[] = [];
    let from: Key | [string] = [''];
    for (;;) {
      let found: string | undefined;
      for (const [endpointId] of this.queue.getKeys({ start: from, limit: 1 })) found = endpointId;
      if (found === undefined) return out;
      out.push(found);
      from = range(found).end;
    }
  }

  /** The delivery, if it is stored. */
  find(endpointId: string, id: string): Delivery | undefined {
    return this.deliveries.get([endpointId, id]);
  }

  get(endpointId: string, id: string): Delivery {
    const delivery = this.deliveries.get([endpointId, id]);
    if (!delivery) throw new GatehouseError('not_found', `no delivery ${id} for webhook endpoint ${endpointId}`);
    return delivery;
  }

  /** Newest first, `limit` at a time, after the delivery `cursor` (the last of the previous page). */
  list(endpointId: string, limit: number, cursor?: string): { data: Delivery[]; nextCursor: string | null } {
    const { start, end } = range(endpointId);
    const data: Delivery[] = [];
    for (const { value } of readRange(this.deliveries.getRange({ start: cursor ? [endpointId, cursor] : end, end: start, reverse: true, limit: limit + 1 }))) {
      if (value.id !== cursor) data.push(value);
    }
    const page = data.slice(0, limit);
    return { data: page, nextCursor: data.length > limit ? page.at(-1)!.id : null };
  }

  /** Makes the endpoint's next delivery due now (it was waiting out a backoff); call inside `store.commit`. */
  retryNowInTransaction(endpointId: string, now = Date.now()): void {
    const head = this.head(endpointId);
    if (!head) return;
    this.deliveries.put([endpointId, head.id], Object.assign({}, head, { nextAttemptAt: new Date(now).toISOString() }));
    // Queued again: in cluster mode a commit that queues a delivery hands it to an instance now
    // (core/cluster/webhook-work.ts), rather than when its backoff would have ended.
    this.queue.put([endpointId, head.id], true);
  }

  /** Forgets an endpoint's deliveries, pending or not; call inside `store.commit`. */
  removeEndpointInTransaction(endpointId: string): void {
    for (const key of this.queue.getKeys(range(endpointId))) this.queue.remove(key);
    for (const key of this.deliveries.getKeys(range(endpointId))) this.deliveries.remove(key);
  }
}
