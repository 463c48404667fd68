import { GatehouseError } from '../../core/errors.ts';
import { looksLikeJwt } from '../../core/jwt-identities.ts';
import type { Principal } from '../../core/principal.ts';
import { hasScope } from '../../core/scopes.ts';
import type { RequestContext } from '../context.ts';
import { sessionPrincipal } from './session-auth.ts';

/**
 * Stage 1: who is calling, and may they call this route. The bearer token is an API key, or,
 * when JWT issuers are configured, a JWT from one of them (core/jwt-identities.ts). A missing,
 * unknown, revoked or not-yet-reviewed key, or a JWT that does not verify, is 401 with a Bearer
 * challenge; a caller without the route's scope is 403 (unless the route is the caller's own,
 * see `RouteDef.selfService`). Without an Authorization header, the console's session cookie
 * may stand in for the key (proxy/stages/session-auth.ts).
 */
const CHALLENGE = 'Bearer realm="gatehouse"';

export async function authenticate(ctx: RequestContext): Promise<void> {
  const route = ctx.route;
  const scope = route?.scope;
  if (!scope) return;
  const header = ctx.headers['authorization'];
  const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  const principal = match ? await identify(ctx, match[1]!) : header === undefined ? sessionPrincipal(ctx) : null;
  if (!principal) {
    ctx.responseHeaders['www-authenticate'] = CHALLENGE;
    throw new GatehouseError('unauthenticated', 'send an API key as `Authorization: Bearer <key>`');
  }
  ctx.principal = principal;
  if (!hasScope(principal.scopes, scope) && !(route.selfService && ctx.params.id === principal.keyId)) {
    ctx.responseHeaders['www-authenticate'] = `${CHALLENGE}, error="insufficient_scope", scope="${scope}"`;
    throw new GatehouseError('insufficient_scope', `this route needs the ${scope} scope`, { required: scope });
  }
}

async function identify(ctx: RequestContext, token: string): Promise<Principal> {
  const jwt = ctx.services.jwtIdentities;
  try {
    return jwt && looksLikeJwt(token) ? await jwt.verify(token) : ctx.services.keys.authenticate(token);
  } catch (error) {
    ctx.responseHeaders['www-authenticate'] = `${CHALLENGE}, error="invalid_token"`;
    throw error;
  }
}
