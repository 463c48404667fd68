import { Type } from '@sinclair/typebox';
import { GatehouseError } from '../../core/errors.ts';
import type { SessionRecord } from '../../core/sessions.ts';
import type { RequestContext } from '../context.ts';
import { json } from '../http/reply.ts';
import { overHttps, sessionCookie, sessionToken } from '../http/session-cookie.ts';
import { problemResponse, type RouteDef } from '../route.ts';
import { EnvName, Nullable } from '../schemas.ts';
import { principal } from './principal.ts';

/**
 * Console sessions (docs/console.md): `POST /v1/sessions` exchanges the API key sent as
 * `Authorization: Bearer` for a session cookie, so the console's page never keeps the key;
 * `GET /v1/sessions/current` says who the caller is and when its session ends; `DELETE
 * /v1/sessions/current` signs out. Signing in needs `decisions:read`, the least the console
 * shows anything with.
 */
export const Session = Type.Object({
  keyId: Type.String(),
  name: Nullable(Type.String()),
  env: EnvName,
  scopes: Type.Array(Type.String()),
  roles: Type.Array(Type.String()),
  session: Nullable(
    Type.Object({
      createdAt: Type.String({ format: 'date-time' }),
      idleExpiresAt: Type.String({ format: 'date-time', description: 'Ends unless used before then; each use moves it forward.' }),
      expiresAt: Type.String({ format: 'date-time', description: 'Ends then however it is used.' }),
    }),
  ),
});

const REFUSALS = {
  401: problemResponse('Missing, unknown, revoked or unreviewed API key, or a session that has ended.'),
  403: problemResponse('The key lacks decisions:read, or a cookie-authenticated request failed the CSRF checks (`forbidden`).'),
  429: problemResponse('Rate limited.'),
};

function view(ctx: RequestContext, session: SessionRecord | null) {
  const caller = principal(ctx);
  const key = ctx.services.keys.get(caller.keyId);
  return {
    keyId: caller.keyId,
    name: key?.name ?? null,
    env: caller.env,
    scopes: caller.scopes,
    roles: caller.roles,
    session: session && {
      createdAt: session.createdAt,
      idleExpiresAt: new Date(session.idleExpiresAt).toISOString(),
      expiresAt: new Date(session.expiresAt).toISOString(),
    },
  };
}

/** The session the request was authenticated by: none when it sent a key. */
function currentSession(ctx: RequestContext): SessionRecord | null {
  const token = ctx.headers['authorization'] === undefined ? sessionToken(ctx.headers) : null;
  return token === null ? null : ctx.services.sessions.resolve(token).session;
}

/** POST /v1/sessions — sign in: the Bearer key buys a session cookie. */
const create: RouteDef = {
  method: 'POST',
  path: '/v1/sessions',
  operationId: 'createSession',
  summary: 'Exchange the API key sent as Authorization: Bearer for a session cookie (HttpOnly, SameSite=Strict) the console authenticates with.',
  scope: 'decisions:read',
  audited: true,
  responses: {
    201: { description: 'Signed in; `Set-Cookie` carries the session token, which no response body ever shows.', schema: Session, headers: ['Set-Cookie'] },
    ...REFUSALS,
    400: problemResponse('No API key was sent (a session cannot start another), or the caller is a JWT identity.'),
  },
  handle(ctx) {
    if (ctx.headers['authorization'] === undefined) {
      throw new GatehouseError('invalid_request', 'send the API key as `Authorization: Bearer <key>`: a session cannot start another');
    }
    const { keys, sessions, signatures } = ctx.services;
    const key = keys.get(principal(ctx).keyId);
    if (!key) throw new GatehouseError('invalid_request', 'sessions are for API keys; a JWT identity authenticates each request itself');
    const { record, token } = sessions.open(key);
    ctx.writes.push(() => sessions.write(record));
    const cookie = sessionCookie(token, sessions.limits.maxMs / 1000, overHttps(ctx.headers, signatures));
    return json(201, view(ctx, record), { 'set-cookie': cookie, 'cache-control': 'no-store' });
  },
};

/** GET /v1/sessions/current — who the caller is, and when its session ends. */
const current: RouteDef = {
  method: 'GET',
  path: '/v1/sessions/current',
  operationId: 'getSession',
  summary: "The caller's key, scopes and roles, and its session's expiry (null when the request sent a key).",
  scope: 'decisions:read',
  audited: true,
  responses: { 200: { description: 'The caller.', schema: Session }, ...REFUSALS },
  handle: (ctx) => json(200, view(ctx, currentSession(ctx)), { 'cache-control': 'no-store' }),
};

/** DELETE /v1/sessions/current — sign out: the session ends and the browser forgets its cookie. */
const end: RouteDef = {
  method: 'DELETE',
  path: '/v1/sessions/current',
  operationId: 'deleteSession',
  summary: 'Sign out: end the session the request was authenticated by and clear its cookie.',
  scope: 'decisions:read',
  audited: true,
  responses: { 204: { description: 'Signed out.', headers: ['Set-Cookie'] }, ...REFUSALS, 404: problemResponse('The request was not authenticated by a session.') },
  handle(ctx) {
    const session = currentSession(ctx);
    if (!session) throw new GatehouseError('not_found', 'this request was authenticated by an API key, not a session: there is nothing to sign out of');
    const { sessions, signatures } = ctx.services;
    ctx.writes.push(() => sessions.remove(session));
    return { status: 204, headers: { 'set-cookie': sessionCookie(null, 0, overHttps(ctx.headers, signatures)) }, body: '' };
  },
};

export const sessionRoutes: RouteDef[] = [create, current, end];
