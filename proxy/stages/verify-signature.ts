import { UNSIGNED } from '../../core/policy-input.ts';
import type { RequestContext } from '../context.ts';

/**
 * Stage 2: RFC 9421 message signatures. Until verification lands every request is treated as
 * unsigned, which is what policies see; a policy that requires a signature therefore denies.
 */
export function verifySignature(ctx: RequestContext): void {
  ctx.signature = UNSIGNED;
}
