import { GatehouseError } from '../../core/errors.ts';
import type { Principal } from '../../core/principal.ts';
import type { Services } from '../services.ts';
import { rateLimitHeaders } from './rate-limit-headers.ts';

/**
 * For a refusal about to be answered and recorded, the same on the /v1 API and the proxy
 * gateway: a refusal (4xx) of a caller nobody authenticated takes a token from its address's
 * bucket (core/unauthenticated-throttle.ts). Beyond the limit this returns the 429 to answer
 * instead, its `Retry-After` and `RateLimit-*` added to `headers`, and the caller records no
 * audit entry: the throttle counts it. Otherwise null, and the refusal goes on as decided.
 * `address` is read only for such a refusal (reading a uWS peer's address costs microseconds).
 */
export function throttledRefusal(
  services: Services,
  principal: Principal | null,
  status: number,
  address: () => string,
  headers: Record<string, string>,
): GatehouseError | null {
  if (principal || status < 400 || status >= 500) return null;
  const decision = services.unauthenticated.take(address());
  if (decision.allowed) return null;
  Object.assign(headers, rateLimitHeaders(decision));
  services.metrics.rateLimited.inc({ env: 'unauthenticated' });
  return new GatehouseError('rate_limited', `too many unauthenticated requests from this address; retry in ${decision.retryAfterSeconds} s`);
}
