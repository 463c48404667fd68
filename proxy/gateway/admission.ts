import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { GatehouseError } from '../../core/errors.ts';
import type { JwtIdentities } from '../../core/jwt-identities.ts';
import { routeOutcome, routePolicyInput, type RouteOutcome } from '../../core/route-access.ts';
import { policySignatureRefusal } from '../../core/signatures/caller-signature.ts';
import { rateLimitHeaders } from '../http/rate-limit-headers.ts';
import type { Services } from '../services.ts';
import type { ProxyExchange } from './exchange.ts';
import { policyHeaders, repeatedField } from './headers.ts';
import type { ProxyRoute } from './routes-config.ts';
import { verifySignature } from './signature.ts';

/**
 * The gateway's per-request checks, in the API pipeline's order and through the same core
 * services: (each single-valued field on one line) → authenticate → verify signature → rate
 * limit → route policy. Refusals throw a GatehouseError (the caller answers it as problem+json
 * and audits it); otherwise the answer is what the policy's verdict means for the request. As
 * on /v1, a policy that answers `requireSignature` for an unsigned request is 401
 * `signature_required`, not a bare denial.
 */
const CHALLENGE = 'Bearer realm="gatehouse"';

/** The bucket anonymous callers share per client address, at sandbox limits. */
const ANONYMOUS_ENV = 'sandbox';

export async function admit(services: Services, ex: ProxyExchange, route: ProxyRoute, req: IncomingMessage): Promise<RouteOutcome> {
  ex.route = route;
  const repeated = repeatedField(req.rawHeaders);
  if (repeated) throw new GatehouseError('invalid_request', `${repeated.name} is sent ${repeated.lines} times: send it once`, { header: repeated.name });
  await authenticate(services, ex, route, req.headers);
  await verifySignature(services, ex, req);
  rateLimit(services, ex);
  ex.facts = {
    method: ex.method,
    path: ex.path,
    query: queryFacts(ex.rawQuery),
    headers: policyHeaders(req.headers),
    signature: ex.signature,
    route: { name: route.name, requireSignature: route.requireSignature, upstream: route.upstream.href },
  };
  ex.check = services.workflow.evaluateInput(route.policy, routePolicyInput(ex.facts, ex.principal));
  // Without a principal (`auth: "none"`) nobody could sign: the policy's denial stands as it is.
  const unsigned = ex.principal && policySignatureRefusal(ex.check, ex.signature, { route: route.name });
  if (unsigned) throw unsigned;
  return routeOutcome(ex.check);
}

/** The query as policies see it: each name once, with its value, or its values in order when repeated. */
function queryFacts(rawQuery: string): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  if (rawQuery === '') return query;
  const params = new URLSearchParams(rawQuery);
  for (const key of new Set(params.keys())) {
    const values = params.getAll(key);
    query[key] = values.length === 1 ? values[0]! : values;
  }
  return query;
}

/** `api-key` routes take the same API keys as /v1; `jwt` routes, tokens of the configured issuers. */
async function authenticate(services: Services, ex: ProxyExchange, route: ProxyRoute, headers: IncomingHttpHeaders): Promise<void> {
  if (route.auth === 'none') return;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(headers['authorization'] ?? '');
  if (!match) {
    ex.responseHeaders['www-authenticate'] = CHALLENGE;
    const how = route.auth === 'jwt' ? 'a JWT as `Authorization: Bearer <JWT>`' : 'an API key as `Authorization: Bearer <key>`';
    throw new GatehouseError('unauthenticated', `send ${how}`);
  }
  try {
    ex.principal = route.auth === 'jwt' ? await jwtIdentities(services, route).verify(match[1]!) : services.keys.authenticate(match[1]!);
  } catch (error) {
    ex.responseHeaders['www-authenticate'] = `${CHALLENGE}, error="invalid_token"`;
    throw error;
  }
}

function jwtIdentities(services: Services, route: ProxyRoute): JwtIdentities {
  // Routes files naming `auth: "jwt"` are refused at load when no issuers are configured.
  if (!services.jwtIdentities) throw new Error(`route ${route.name} authenticates with JWTs, but no JWT issuers are configured`);
  return services.jwtIdentities;
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
