import { GatehouseError } from '../../core/errors.ts';
import type { RequestContext } from '../context.ts';
import { asGatehouseError, problemReply } from '../http/problem.ts';
import type { Reply } from '../http/reply.ts';
import { log } from '../../core/log.ts';

/**
 * A refusal as the request's reply: the problem document for `error`, with its code kept for the
 * audit entry. Anything that is not a GatehouseError is an internal fault and is logged.
 */
export function refuse(ctx: RequestContext, error: unknown): Reply {
  const refusal = asGatehouseError(error);
  if (refusal.code === 'internal' && !(error instanceof GatehouseError)) log.error({ requestId: ctx.requestId, err: error }, 'the request failed');
  ctx.errorCode = refusal.code;
  return problemReply(refusal, ctx.requestId);
}
