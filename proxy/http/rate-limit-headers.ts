import type { RateDecision } from '../../core/rate-limiter.ts';

/**
 * The `RateLimit-*` headers (and `Retry-After` on a refusal) for a token-bucket decision, the
 * same on the /v1 API and the proxy gateway.
 */
export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  const headers: Record<string, string> = {
    'ratelimit-limit': String(decision.limit),
    'ratelimit-remaining': String(decision.remaining),
    'ratelimit-reset': String(decision.resetSeconds),
  };
  if (!decision.allowed) headers['retry-after'] = String(decision.retryAfterSeconds);
  return headers;
}
