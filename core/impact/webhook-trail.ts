import type { Env } from '../env.ts';
import type { StoredEvent } from '../events/event.ts';
import type { Delivery } from '../webhooks/deliveries.ts';
import type { Webhooks } from '../webhooks/webhooks.ts';

/**
 * The webhook deliveries of some events: every delivery whose message is one of them (a
 * delivery's `messageId` is its event's id), replays included, across the environment's
 * endpoints. The outbox is kept per endpoint, newest first by creation, and a delivery is created
 * only after its event was committed, so each endpoint is read back only as far as the oldest
 * event's time; endpoints created after the last event never received any of them.
 */
const PAGE = 200;

export function deliveriesOf(webhooks: Webhooks, env: Env, events: readonly StoredEvent[]): Delivery[] {
  if (events.length === 0) return [];
  const ids = new Set(events.map((event) => event.id));
  const since = events.reduce((oldest, event) => (event.time < oldest ? event.time : oldest), events[0]!.time);
  const lastCursor = Math.max(...events.map((event) => event.cursor));
  const found: Delivery[] = [];
  for (const endpoint of webhooks.endpoints.list(env)) {
    if (endpoint.sinceCursor >= lastCursor) continue;
    let cursor: string | undefined;
    reading: for (;;) {
      const page = webhooks.deliveries.list(endpoint.id, PAGE, cursor);
      for (const delivery of page.data) {
        if (delivery.createdAt < since) break reading;
        if (ids.has(delivery.messageId)) found.push(delivery);
      }
      if (page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
  }
  return found;
}
