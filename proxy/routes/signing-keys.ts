import { GatehouseError } from '../../core/errors.ts';
import type { KeyRecord } from '../../core/keys.ts';
import { hasScope } from '../../core/scopes.ts';
import { signingKeyView } from '../../core/signing-keys.ts';
import type { RequestContext } from '../context.ts';
import { json } from '../http/reply.ts';
import { problemResponse, type RouteDef } from '../route.ts';
import { manageable } from './keys.ts';
import { principal } from './principal.ts';
import { RegisterSigningKeyBody, SigningKey, SigningKeyList } from './signing-key-schemas.ts';

/**
 * An API key's RFC 9421 signing keys (core/signing-keys.ts). The key itself may manage its own;
 * an admin may manage those of the keys it manages (a sandbox admin, sandbox keys only). For
 * anyone else the API key does not exist (404).
 *
 * A production key with no active signing key may register (and list) its first one unsigned:
 * that is how it starts signing. From then on it must sign, so adding or revoking keys needs a
 * signature made with a key already registered.
 */
const REFUSALS = {
  401: problemResponse('Missing or invalid API key, or a missing or invalid signature (`signature_required`, `signature_invalid`).'),
  403: problemResponse('Neither the key itself nor an admin.'),
  404: problemResponse('No such API key (or not one the caller manages).'),
};

/** The API key named in the path, if the caller may manage its signing keys. */
function ownerOf(ctx: RequestContext): KeyRecord {
  const caller = principal(ctx);
  const id = ctx.params.id!;
  const owner = ctx.services.keys.get(id);
  const allowed = owner && (owner.id === caller.keyId || (hasScope(caller.scopes, 'admin') && manageable(caller).includes(owner.env)));
  if (!allowed) throw new GatehouseError('not_found', `no key ${id}`);
  return owner;
}

/** POST /v1/keys/{id}/signing-keys — register a signing key. */
const register: RouteDef = {
  method: 'POST',
  path: '/v1/keys/{id}/signing-keys',
  operationId: 'registerSigningKey',
  summary: 'Register a signing key (a public JWK, or an HMAC secret) for an API key; its kid is the RFC 9421 keyid.',
  scope: 'admin',
  selfService: true,
  signatureBootstrap: true,
  audited: true,
  idempotent: true,
  body: RegisterSigningKeyBody,
  responses: {
    201: { description: 'Registered; active at once.', schema: SigningKey },
    400: problemResponse('Not a supported JWK, private key material, or an alg that does not fit the key.'),
    ...REFUSALS,
    409: problemResponse('The kid is already registered (kids are never reused), too many active keys, or the API key is revoked.'),
  },
  async handle(ctx) {
    const owner = ownerOf(ctx);
    if (owner.status === 'revoked' || owner.status === 'rejected') throw new GatehouseError('conflict', `key ${owner.id} is ${owner.status}`);
    const { signingKeys } = ctx.services;
    const record = await signingKeys.prepare(owner.id, ctx.body as RegisterSigningKeyBody, principal(ctx).keyId);
    ctx.writes.push(() => signingKeys.write(record));
    return json(201, signingKeyView(record));
  },
};

/** GET /v1/keys/{id}/signing-keys — every signing key of an API key, revoked ones included. */
const list: RouteDef = {
  method: 'GET',
  path: '/v1/keys/{id}/signing-keys',
  operationId: 'listSigningKeys',
  summary: "List an API key's signing keys, revoked ones included (never an HMAC secret).",
  scope: 'admin',
  selfService: true,
  signatureBootstrap: true,
  audited: true,
  responses: { 200: { description: 'The signing keys.', schema: SigningKeyList }, ...REFUSALS },
  handle(ctx) {
    const owner = ownerOf(ctx);
    return json(200, { data: ctx.services.signingKeys.list(owner.id).map(signingKeyView) });
  },
};

/** DELETE /v1/keys/{id}/signing-keys/{kid} — revoke a signing key; signatures by it fail from now on. */
const revoke: RouteDef = {
  method: 'DELETE',
  path: '/v1/keys/{id}/signing-keys/{kid}',
  operationId: 'revokeSigningKey',
  summary: 'Revoke a signing key. Signatures naming it fail (`unknown_key`) from the next request on; the record stays for the audit trail.',
  scope: 'admin',
  selfService: true,
  audited: true,
  idempotent: true,
  responses: {
    200: { description: 'The revoked signing key.', schema: SigningKey },
    ...REFUSALS,
    404: problemResponse('No such API key or signing key.'),
    409: problemResponse('Already revoked, or a retry is in flight.'),
  },
  handle(ctx) {
    const owner = ownerOf(ctx);
    const { signingKeys } = ctx.services;
    const revoked = signingKeys.revoke(owner.id, ctx.params.kid!, principal(ctx).keyId);
    ctx.checks.push(() => signingKeys.assertCurrent(revoked));
    ctx.writes.push(() => signingKeys.write(revoked));
    return json(200, signingKeyView(revoked));
  },
};

export const signingKeyRoutes: RouteDef[] = [register, list, revoke];
