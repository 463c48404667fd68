import { Type, type Static } from '@sinclair/typebox';
import { GatehouseError } from '../../core/errors.ts';
import { SESSION_CODE_PATTERN } from '../../core/session-codes.ts';
import type { SessionRecord } from '../../core/sessions.ts';
import type { RequestContext } from '../context.ts';
import { json } from '../http/reply.ts';
import { overHttps, sessionCookie } from '../http/session-cookie.ts';
import { problemResponse, type RouteDef } from '../route.ts';
import { EnvName, Nullable } from '../schemas.ts';
import { refuseOtherOrigin, requestSession } from '../stages/session-auth.ts';
import { principal } from './principal.ts';
import { RegisterSigningKeyBody } from './signing-key-schemas.ts';

/**
 * Console sessions (docs/console.md): `POST /v1/sessions` exchanges the API key sent as
 * `Authorization: Bearer` for a session cookie, so the console's page never keeps the key;
 * `GET /v1/sessions/current` says who the caller is and when its session ends; `DELETE
 * /v1/sessions/current` signs out. Signing in needs `decisions:read`, the least the console
 * shows anything with.
 *
 * Keys that must sign cannot sign in with the key alone: a request signed by one of their signing
 * keys gets a one-time code (`POST /v1/sessions/codes`), which the page redeems with the public
 * key it will sign every request with (`POST /v1/sessions/redeem`).
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
      signingKey: Nullable(
        Type.Object(
          {
            kid: Type.String({ description: 'The keyid every request on the session is signed with: the page key’s RFC 7638 thumbprint.' }),
            alg: Type.Union([Type.Literal('ed25519'), Type.Literal('ecdsa-p256-sha256')]),
            authorisedBy: Type.String({ description: 'The signing key whose signed request issued the sign-in code.' }),
          },
          { description: 'Set when the session was opened with a sign-in code: its requests must be signed with this key.' },
        ),
      ),
    }),
  ),
});

export const SessionCode = Type.Object({
  code: Type.String({ pattern: SESSION_CODE_PATTERN, description: 'Redeemable once, by POST /v1/sessions/redeem, until `expiresAt`.' }),
  keyId: Type.String(),
  expiresAt: Type.String({ format: 'date-time' }),
});

export const RedeemSessionCodeBody = Type.Object(
  {
    code: Type.String({ pattern: SESSION_CODE_PATTERN }),
    jwk: Type.Index(RegisterSigningKeyBody, ['jwk'], {
      description: 'The public key the page signs with: Ed25519 (OKP) or P-256 (EC). Private members are refused; the kid is its thumbprint.',
    }),
  },
  { additionalProperties: false },
);

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
      signingKey: session.signingKey ? { kid: session.signingKey.kid, alg: session.signingKey.alg, authorisedBy: session.signingKey.authorisedBy } : null,
    },
  };
}

/** Sessions are for API keys: a JWT identity authenticates each request itself. */
function apiKeyOf(ctx: RequestContext) {
  const key = ctx.services.keys.get(principal(ctx).keyId);
  if (!key) throw new GatehouseError('invalid_request', 'sessions are for API keys; a JWT identity authenticates each request itself');
  return key;
}

function signedIn(ctx: RequestContext, record: SessionRecord, token: string) {
  const { sessions, signatures } = ctx.services;
  const cookie = sessionCookie(token, sessions.limits.maxMs / 1000, overHttps(ctx.headers, signatures));
  return json(201, view(ctx, record), { 'set-cookie': cookie, 'cache-control': 'no-store' });
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
    const { sessions } = ctx.services;
    const { record, token } = sessions.open(apiKeyOf(ctx));
    ctx.writes.push(() => sessions.write(record));
    return signedIn(ctx, record, token);
  },
};

/**
 * POST /v1/sessions/codes — a one-time sign-in code for the console, for keys that must sign. The
 * request must be signed by one of the key's own signing keys, whatever the server setting: the
 * code lets a browser page sign in the key's name, and that signer vouches for it.
 */
const createCode: RouteDef = {
  method: 'POST',
  path: '/v1/sessions/codes',
  operationId: 'createSessionCode',
  summary: "A one-time code (5 minutes) that signs the console in with the key's own signature: the request must be signed (RFC 9421) by one of the key's signing keys.",
  scope: 'decisions:read',
  audited: true,
  responses: {
    201: { description: 'The code, shown once.', schema: SessionCode },
    ...REFUSALS,
    400: problemResponse('The request was authenticated by a session, or the caller is a JWT identity.'),
    401: problemResponse('Missing, unknown, revoked or unreviewed API key, or the request is not signed by one of its signing keys (`signature_required`, `signature_invalid`).'),
  },
  handle(ctx) {
    if (ctx.headers['authorization'] === undefined) {
      throw new GatehouseError('invalid_request', 'send the API key as `Authorization: Bearer <key>`: a session cannot issue sign-in codes');
    }
    const key = apiKeyOf(ctx);
    const signer = ctx.signature.verified ? ctx.signature.keyId : null;
    if (signer === null) {
      throw new GatehouseError('signature_required', "a sign-in code lets a browser sign in this key's name: request it signed (RFC 9421) with one of the key's signing keys", {
        keyId: key.id,
      });
    }
    const { codes } = ctx.services.sessions;
    const { record, code } = codes.issue(key.id, signer);
    ctx.writes.push(() => codes.write(record));
    return json(201, { code, keyId: key.id, expiresAt: new Date(record.expiresAt).toISOString() }, { 'cache-control': 'no-store' });
  },
};

/**
 * POST /v1/sessions/redeem — the console's page redeems a sign-in code with the public key it
 * will sign with, for a session cookie. Public: the code is the credential. A browser cannot
 * send this JSON from another site's page without a CORS preflight, which is never granted, and
 * an `Origin` naming another site is refused.
 */
const redeem: RouteDef = {
  method: 'POST',
  path: '/v1/sessions/redeem',
  operationId: 'redeemSessionCode',
  summary: 'Redeem a sign-in code with the public key (JWK) the page signs with: a session cookie whose every request must be signed with that key.',
  scope: null,
  audited: true,
  body: RedeemSessionCodeBody,
  responses: {
    201: { description: 'Signed in; `Set-Cookie` carries the session token.', schema: Session, headers: ['Set-Cookie'] },
    400: problemResponse('The body is not a code and an Ed25519 or P-256 public JWK.'),
    401: problemResponse('The code is unknown, used or expired, or its key or the signing key that asked for it is no longer active.'),
    403: problemResponse('Sent from a page of another origin.'),
    409: problemResponse('Another request redeemed the same code at the same time.'),
  },
  async handle(ctx) {
    refuseOtherOrigin(ctx);
    const { code, jwk } = ctx.body as Static<typeof RedeemSessionCodeBody>;
    const { sessions, signatures } = ctx.services;
    const redeemed = await sessions.redeem(code, jwk, signatures.signingKeys);
    // The code named its key: the audit entry and the reply are that key's.
    ctx.principal = redeemed.principal;
    ctx.checks.push(() => sessions.codes.assertUnused(redeemed.code));
    ctx.writes.push(() => {
      sessions.codes.remove(redeemed.code);
      sessions.write(redeemed.record);
    });
    return signedIn(ctx, redeemed.record, redeemed.token);
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
  handle: (ctx) => json(200, view(ctx, requestSession(ctx)), { 'cache-control': 'no-store' }),
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
    const session = requestSession(ctx);
    if (!session) throw new GatehouseError('not_found', 'this request was authenticated by an API key, not a session: there is nothing to sign out of');
    const { sessions, signatures } = ctx.services;
    ctx.writes.push(() => sessions.remove(session));
    return { status: 204, headers: { 'set-cookie': sessionCookie(null, 0, overHttps(ctx.headers, signatures)) }, body: '' };
  },
};

export const sessionRoutes: RouteDef[] = [create, createCode, redeem, current, end];
