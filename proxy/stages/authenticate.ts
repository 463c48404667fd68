import { GatehouseError } from '../../core/errors.ts';
import { principalOf } from '../../core/keys.ts';
import { hasScope } from '../../core/scopes.ts';
import type { RequestContext } from '../context.ts';

/**
 * Stage 1: who is calling, and may they call this route. A missing, unknown, revoked or
 * not-yet-reviewed key is 401 with a Bearer challenge; a key without the route's scope is 403.
 */
const CHALLENGE = 'Bearer realm="gatehouse"';

export function authenticate(ctx: RequestContext): void {
  const scope = ctx.route?.scope;
  if (!scope) return;
  const header = ctx.headers['authorization'] ?? '';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) {
    ctx.responseHeaders['www-authenticate'] = CHALLENGE;
    throw new GatehouseError('unauthenticated', 'send an API key as `Authorization: Bearer <key>`');
  }
  const record = ctx.services.keys.lookup(match[1]!);
  if (!record || record.status !== 'active') {
    ctx.responseHeaders['www-authenticate'] = `${CHALLENGE}, error="invalid_token"`;
    const why = !record ? 'is not known' : record.status === 'pending_review' ? 'is pending security review' : `is ${record.status}`;
    throw new GatehouseError('unauthenticated', `this API key ${why}`);
  }
  ctx.principal = principalOf(record);
  if (!hasScope(record.scopes, scope)) {
    ctx.responseHeaders['www-authenticate'] = `${CHALLENGE}, error="insufficient_scope", scope="${scope}"`;
    throw new GatehouseError('insufficient_scope', `this route needs the ${scope} scope`, { required: scope });
  }
}
