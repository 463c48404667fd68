import { GatehouseError } from '../../core/errors.ts';
import type { Principal } from '../../core/principal.ts';
import type { RequestContext } from '../context.ts';

/** The authenticated caller; routes with a scope are never reached without one. */
export function principal(ctx: RequestContext): Principal {
  if (!ctx.principal) throw new GatehouseError('internal', 'route reached without authentication');
  return ctx.principal;
}
