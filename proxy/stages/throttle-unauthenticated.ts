import type { RequestContext } from '../context.ts';
import type { Reply } from '../http/reply.ts';
import { throttledRefusal } from '../http/throttled-refusal.ts';
import { refuse } from './refuse.ts';

/**
 * Between deciding and storing: a refusal of an unauthenticated caller over its address's limit
 * becomes 429 `rate_limited` (proxy/http/throttled-refusal.ts), which the pipeline answers
 * without an audit entry. Returns that 429, or null when the request goes on as decided.
 */
export function throttleUnauthenticated(ctx: RequestContext, reply: Reply): Reply | null {
  const throttled = throttledRefusal(ctx.services, ctx.principal, reply.status, ctx.remoteAddress, ctx.responseHeaders);
  return throttled && refuse(ctx, throttled);
}
