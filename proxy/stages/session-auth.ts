import { GatehouseError } from '../../core/errors.ts';
import type { Principal } from '../../core/principal.ts';
import { assertStillAuthorised, sessionVerificationKey } from '../../core/session-signing-keys.ts';
import type { SessionRecord } from '../../core/sessions.ts';
import type { SessionSigning } from '../../core/signatures/caller-signature.ts';
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
 *
 * A session opened with a sign-in code signs its requests with its page's key; the signature
 * stage judges them against it (`sessionSigning`).
 */
export const CSRF_HEADER = 'x-gatehouse-csrf';

const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);

/**
 * What a session bound to a key may send unsigned, by operationId: the WebSocket upgrade, which a
 * browser cannot add signature fields to, and signing out, which only gives the session up (and
 * must work for a page that lost its key to a reload).
 */
const UNSIGNED_ON_KEY_BOUND_SESSION: ReadonlySet<string> = new Set(['stream', 'deleteSession']);

/** The session each cookie-authenticated request came with, for the stages and routes after authentication. */
const SESSIONS = new WeakMap<RequestContext, SessionRecord>();

/** The principal the request's session cookie authenticates, or null when it carries none. */
export function sessionPrincipal(ctx: RequestContext): Principal | null {
  const token = sessionToken(ctx.headers);
  if (token === null) return null;
  const { sessions, signatures } = ctx.services;
  let active;
  try {
    active = sessions.resolve(token);
    if (active.session.signingKey) assertStillAuthorised(signatures.signingKeys, active.session.keyId, active.session.signingKey);
  } catch (error) {
    ctx.responseHeaders['set-cookie'] = sessionCookie(null, 0, overHttps(ctx.headers, signatures));
    throw error;
  }
  // Set before the checks below, so that a forged request's refusal is recorded under its key.
  ctx.principal = active.principal;
  SESSIONS.set(ctx, active.session);
  refuseCrossSite(ctx);
  const touched = active.touched;
  if (touched) ctx.writes.push(() => sessions.write(touched));
  return active.principal;
}

/** The session that authenticated the request, or null when it sent a key (or nothing). */
export function requestSession(ctx: RequestContext): SessionRecord | null {
  return SESSIONS.get(ctx) ?? null;
}

/** How the signature stage judges a request on a session that signs with its page's key; null for any other request. */
export function sessionSigning(ctx: RequestContext): SessionSigning | null {
  const session = SESSIONS.get(ctx);
  if (!session?.signingKey) return null;
  return {
    key: sessionVerificationKey(session.keyId, session.signingKey),
    unsignedAllowed: UNSIGNED_ON_KEY_BOUND_SESSION.has(ctx.route?.operationId ?? ''),
  };
}

/** Refuses a request whose `Origin` names another origin than this server: what a session is opened or used from. */
export function refuseOtherOrigin(ctx: RequestContext): void {
  const origin = ctx.headers['origin'];
  if (origin !== undefined && !sameOrigin(ctx, origin)) {
    throw new GatehouseError('forbidden', `a session is accepted only from this server's own pages, not from ${origin}`);
  }
}

function refuseCrossSite(ctx: RequestContext): void {
  refuseOtherOrigin(ctx);
  const origin = ctx.headers['origin'];
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
