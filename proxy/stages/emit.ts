import type { RequestContext } from '../context.ts';

/**
 * Stage 8: after the commit, tell the event log's readers that events may be waiting. The stream
 * publishes them to subscribers in cursor order and the webhook fan-out queues their deliveries
 * (proxy/streaming/publisher.ts, core/webhooks/). Every audited call committed at least its audit
 * entry's event, so every committed call announces.
 */
export function emit(ctx: RequestContext): void {
  const audited = ctx.route?.audited ?? true;
  if (audited || ctx.events.length > 0) ctx.services.events.announce();
}
