import { GatehouseError } from '../../core/errors.ts';
import type { Principal } from '../../core/principal.ts';
import type { RequestContext } from '../context.ts';
import { overHttps, sessionCookie, sessionToken } from '../http/session-cookie.ts';

/**
 * Authentication by the console's session cookie, for requests without an Authorization header
 * (docs/console.md). A browser sends cookies on its own, so a cookie alone does not show that
 * the console's page made the request (cross-site request forgery). Besides SameSite=Strict:
 *
 * - a request whose `Origin` is another origin than this server's is refused;
 * - a WebSocket upgrade must send `Origin` (browsers always do): that is its only defence, since
 *   a page cannot add headers to it;
 * - a request that changes something (any method but GET and HEAD) must carry the header
 *   `X-Gatehouse-CSRF: 1`, which another origin's page cannot send without a CORS preflight that
 *   this server never grants.
 */
export const CSRF_HEADER = 'x-gatehouse-csrf';

const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);

/** The principal the request's session cookie authenticates, or null when it carries none. */
export function sessionPrincipal(ctx: RequestContext): Principal | null {
  const token = sessionToken(ctx.headers);
  if (token === null) return null;
  const { sessions, signatures } = ctx.services;
  let active;
  try {
    active = sessions.resolve(token);
  } catch (error) {
    ctx.responseHeaders['set-cookie'] = sessionCookie(null, 0, overHttps(ctx.headers, signatures));
    throw error;
  }
  // Set before the checks below, so that a forged request's refusal is recorded under its key.
  ctx.principal = active.principal;
  refuseCrossSite(ctx);
  const touched = active.touched;
  if (touched) ctx.writes.push(() => sessions.write(touched));
  return active.principal;
}

function refuseCrossSite(ctx: RequestContext): void {
  const origin = ctx.headers['origin'];
  if (origin !== undefined && !sameOrigin(ctx, origin)) {
    throw new GatehouseError('forbidden', `a session cookie is accepted only from this server's own pages, not from ${origin}`);
  }
  if (origin === undefined && ctx.headers['upgrade']?.toLowerCase() === 'websocket') {
    throw new GatehouseError('forbidden', 'a WebSocket upgrade authenticated by a session cookie must send Origin');
  }
  if (!SAFE_METHODS.has(ctx.method) && ctx.headers[CSRF_HEADER] !== '1') {
    throw new GatehouseError('forbidden', `a ${ctx.method} authenticated by a session cookie must send the header X-Gatehouse-CSRF: 1`);
  }
}

/** Whether `origin` is this server as the browser reached it: the public URL when one is set, otherwise the Host it addressed. */
function sameOrigin(ctx: RequestContext, origin: string): boolean {
  const publicUrl = ctx.services.signatures.publicUrl;
  if (publicUrl) return origin === publicUrl.origin;
  try {
    return new URL(origin).host === (ctx.headers['host'] ?? '').toLowerCase();
  } catch {
    return false;
  }
}
