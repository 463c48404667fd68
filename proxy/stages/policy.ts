import type { RequestFacts } from '../../core/policy-input.ts';
import { policySignatureRefusal } from '../../core/signatures/caller-signature.ts';
import type { RequestContext } from '../context.ts';

/**
 * Stage 5: the governing policy. Each route that is governed supplies its own check (which
 * policy, which action); this stage runs it and the metrics hear of it through the workflow.
 * A policy that answers `requireSignature` for an unsigned request is answered 401
 * `signature_required` (core/signatures/caller-signature.ts).
 */
export function evaluatePolicy(ctx: RequestContext): void {
  ctx.route?.policy?.(ctx);
  const check = ctx.policyCheck;
  const refusal = check && policySignatureRefusal(check, ctx.signature, { auditTrail: (ctx.decision ?? ctx.draft)?.auditTrail ?? null });
  if (refusal) throw refusal;
}

/** What the policy input says about the HTTP request. */
export function requestFacts(ctx: RequestContext): RequestFacts {
  return { method: ctx.method, path: ctx.path, signature: ctx.signature };
}
