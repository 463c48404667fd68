import { GatehouseError } from '../../core/errors.ts';
import type { RequestContext } from '../context.ts';
import { rateLimitHeaders } from '../http/rate-limit-headers.ts';

/**
 * Stage 3: the caller's token bucket. Authenticated replies carry `RateLimit-*` headers; a
 * refusal is 429 with `Retry-After`.
 */
export function rateLimit(ctx: RequestContext): void {
  const principal = ctx.principal;
  if (!principal) return;
  const decision = ctx.services.rateLimiter.take(principal.keyId, principal.env);
  Object.assign(ctx.responseHeaders, rateLimitHeaders(decision));
  if (!decision.allowed) {
    ctx.services.metrics.rateLimited.inc({ env: principal.env });
    throw new GatehouseError('rate_limited', `rate limit exceeded; retry in ${decision.retryAfterSeconds} s`);
  }
}
