import type { IncomingHttpHeaders } from 'node:http';
import { GatehouseError } from '../../core/errors.ts';
import { routeOutcome, routePolicyInput, type RouteOutcome } from '../../core/route-access.ts';
import { rateLimitHeaders } from '../http/rate-limit-headers.ts';
import type { Services } from '../services.ts';
import type { ProxyExchange } from './exchange.ts';
import { policyHeaders } from './headers.ts';
import type { ProxyRoute } from './routes-config.ts';

/**
 * The gateway's per-request checks, in the API pipeline's order and through the same core
 * services: authenticate → verify signature → rate limit → route policy. Refusals throw a
 * GatehouseError (the caller answers it as problem+json and audits it); otherwise the answer is
 * what the policy's verdict means for the request.
 *
 * Signatures: RFC 9421 verification of proxied requests is not wired yet, so every request is
 * unsigned as far as policies know, and routes or rules that require a signature deny.
 */
const CHALLENGE = 'Bearer realm="gatehouse"';

/** The bucket anonymous callers share per client address, at sandbox limits. */
const ANONYMOUS_ENV = 'sandbox';

export function admit(services: Services, ex: ProxyExchange, route: ProxyRoute, headers: IncomingHttpHeaders): RouteOutcome {
  ex.route = route;
  authenticate(services, ex, route, headers);
  rateLimit(services, ex);
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(ex.query.keys())) {
    const values = ex.query.getAll(key);
    query[key] = values.length === 1 ? values[0]! : values;
  }
  ex.facts = {
    method: ex.method,
    path: ex.path,
    query,
    headers: policyHeaders(headers),
    signature: ex.signature,
    route: { name: route.name, upstream: route.upstream.href, requireSignature: route.requireSignature },
  };
  ex.check = services.workflow.evaluateInput(route.policy, routePolicyInput(ex.facts, ex.principal));
  return routeOutcome(ex.check);
}

function authenticate(services: Services, ex: ProxyExchange, route: ProxyRoute, headers: IncomingHttpHeaders): void {
  if (route.auth === 'none') return;
  if (route.auth === 'jwt') {
    throw new GatehouseError('not_implemented', `route ${route.name} authenticates with JWTs, which the proxy gateway does not verify yet`);
  }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(headers['authorization'] ?? '');
  if (!match) {
    ex.responseHeaders['www-authenticate'] = CHALLENGE;
    throw new GatehouseError('unauthenticated', 'send an API key as `Authorization: Bearer <key>`');
  }
  try {
    ex.principal = services.keys.authenticate(match[1]!);
  } catch (error) {
    ex.responseHeaders['www-authenticate'] = `${CHALLENGE}, error="invalid_token"`;
    throw error;
  }
}

function rateLimit(services: Services, ex: ProxyExchange): void {
  const principal = ex.principal;
  const env = principal?.env ?? ANONYMOUS_ENV;
  const decision = services.rateLimiter.take(principal?.keyId ?? `anonymous:${ex.clientAddress ?? 'unknown'}`, env);
  Object.assign(ex.responseHeaders, rateLimitHeaders(decision));
  if (!decision.allowed) {
    services.metrics.rateLimited.inc({ env });
    throw new GatehouseError('rate_limited', `rate limit exceeded; retry in ${decision.retryAfterSeconds} s`);
  }
}
