import type { RequestFacts } from '../../core/policy-input.ts';
import type { RequestContext } from '../context.ts';

/**
 * Stage 5: the governing policy. Each route that is governed supplies its own check (which
 * policy, which action); this stage runs it and the metrics hear of it through the workflow.
 */
export function evaluatePolicy(ctx: RequestContext): void {
  ctx.route?.policy?.(ctx);
}

/** What the policy input says about the HTTP request. */
export function requestFacts(ctx: RequestContext): RequestFacts {
  return { method: ctx.method, path: ctx.path, signature: ctx.signature };
}
