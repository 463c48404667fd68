import { GatehouseError } from '../../core/errors.ts';
import type { RequestFacts } from '../../core/policy-input.ts';
import type { RequestContext } from '../context.ts';

/**
 * Stage 5: the governing policy. Each route that is governed supplies its own check (which
 * policy, which action); this stage runs it and the metrics hear of it through the workflow.
 * A policy that answers `requireSignature` for an unsigned request is answered 401
 * `signature_required`, whatever else it said: the caller can fix that by signing.
 */
export function evaluatePolicy(ctx: RequestContext): void {
  ctx.route?.policy?.(ctx);
  const check = ctx.policyCheck;
  if (check?.verdict.requireSignature && !ctx.signature.verified) {
    throw new GatehouseError('signature_required', `${check.policy} requires this request to be signed (RFC 9421)`, {
      policy: check.policy,
      reasons: check.verdict.reasons,
      auditTrail: (ctx.decision ?? ctx.draft)?.auditTrail ?? null,
    });
  }
}

/** What the policy input says about the HTTP request. */
export function requestFacts(ctx: RequestContext): RequestFacts {
  return { method: ctx.method, path: ctx.path, signature: ctx.signature };
}
