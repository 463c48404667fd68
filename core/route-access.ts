import type { PolicyCheck } from './decision-workflow.ts';
import { GatehouseError } from './errors.ts';
import { principalInput, type SignatureFacts } from './policy-input.ts';
import type { Principal } from './principal.ts';

/**
 * Proxy mode's policy contract (docs/policy-contract.md, "Route policies"): what a route policy
 * is told about a proxied request, and what its verdict means for that request.
 */
export interface RouteInfo {
  name: string;
  upstream: string;
  requireSignature: boolean;
}

/** The request as the route policy sees it; `principal` is added per evaluation. */
export interface RouteRequestFacts {
  method: string;
  /** The path without the query string, neither decoded nor normalised. */
  path: string;
  query: Record<string, string | string[]>;
  /** An allowlisted subset, names in lower case. */
  headers: Record<string, string>;
  signature: SignatureFacts;
  route: RouteInfo;
}

/** What a policy sees of a caller the route does not authenticate (`auth: "none"`). */
const ANONYMOUS = { env: null, keyId: null, roles: [], scopes: [] };

/** The route policy's input: the facts, the caller and the time, members in canonical order (its digest then needs no sort). */
export function routePolicyInput(facts: RouteRequestFacts, principal: Principal | null) {
  return {
    headers: facts.headers,
    method: facts.method,
    now_ns: Date.now() * 1e6,
    path: facts.path,
    principal: principal ? principalInput(principal) : ANONYMOUS,
    query: facts.query,
    route: facts.route,
    signature: facts.signature,
  };
}

/**
 * `forward` at once, `deny`, or `hold` until a person approves: an allow with any gate but
 * `auto` is permitted only once that gate is passed.
 */
export type RouteOutcome = 'forward' | 'deny' | 'hold';

export function routeOutcome(check: PolicyCheck): RouteOutcome {
  if (!check.verdict.allow) return 'deny';
  return check.verdict.gate === 'auto' ? 'forward' : 'hold';
}

/** The refusal a denied proxied request gets, with the policy's reasons. */
export function routeDenial(check: PolicyCheck, facts: RouteRequestFacts): GatehouseError {
  const reasons = check.verdict.reasons.length ? check.verdict.reasons : ['the policy did not allow this request'];
  return new GatehouseError('policy_denied', `${check.policy} denied ${facts.method} ${facts.path}: ${reasons.join('; ')}`, {
    reasons,
    policy: check.policy,
    route: facts.route.name,
  });
}
