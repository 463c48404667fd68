import { ENVS, type Env } from '../../core/env.ts';
import { GatehouseError } from '../../core/errors.ts';
import { decisionEvent, policyDeniedEvent } from '../../core/events/decision-events.ts';
import { keyEvent } from '../../core/events/key-events.ts';
import { keyView, type KeyRecord } from '../../core/keys.ts';
import type { Principal } from '../../core/principal.ts';
import type { RequestContext } from '../context.ts';
import { json } from '../http/reply.ts';
import { problemResponse, type RouteDef } from '../route.ts';
import { CreatedKey, CreateKeyBody, Key, KeyList, ListKeysQuery } from '../schemas.ts';
import { requestFacts } from '../stages/policy.ts';
import { principal } from './principal.ts';

/**
 * API keys (admin scope). A sandbox admin manages sandbox keys only; a production admin manages
 * both. Production keys are issued `pending_review` with a security-review decision
 * (core/key-review.ts) that an admin approves through the decisions API.
 */

/** The environments whose keys `caller` may see and manage. */
export function manageable(caller: Principal): readonly Env[] {
  return caller.env === 'production' ? ENVS : ['sandbox'];
}

/** POST /v1/keys — issue a key; the secret is in this response only. */
const create: RouteDef = {
  method: 'POST',
  path: '/v1/keys',
  operationId: 'createKey',
  summary: 'Issue an API key. Sandbox keys are active at once; production keys wait for a security review.',
  scope: 'admin',
  audited: true,
  body: CreateKeyBody,
  responses: {
    201: { description: 'Issued. `key` is the secret, shown only here.', schema: CreatedKey },
    400: problemResponse('Invalid body.'),
    401: problemResponse('Missing or invalid API key.'),
    403: problemResponse('Not an admin key, a sandbox admin asking for a production key, or the review policy refused.'),
    422: problemResponse('The security-review policy is not loaded.'),
  },
  policy(ctx) {
    const caller = principal(ctx);
    const body = ctx.body as CreateKeyBody;
    if (!manageable(caller).includes(body.env)) {
      throw new GatehouseError('forbidden', `a ${caller.env} admin key cannot issue ${body.env} keys`);
    }
    const issued = ctx.services.keys.draft({ ...body, createdBy: caller.keyId });
    ctx.issuedKey = issued;
    if (body.env !== 'production') return;
    const { keyReview, workflow } = ctx.services;
    const draft = workflow.draft('production', caller, keyReview.reviewRequest(issued.record), { type: 'key', id: issued.record.id });
    ctx.draft = draft;
    const check = workflow.check('create', draft, caller, requestFacts(ctx));
    ctx.policyCheck = check;
    if (!check.verdict.allow) ctx.events.push(policyDeniedEvent('create', check, draft));
  },
  handle(ctx) {
    const { keys, workflow } = ctx.services;
    const issued = ctx.issuedKey!;
    let record: KeyRecord = issued.record;
    let review: { decisionId: string; auditTrail: string } | null = null;
    if (ctx.draft) {
      const decision = workflow.applyCreate(ctx.draft, ctx.policyCheck!);
      ctx.decision = decision;
      record = { ...record, reviewDecisionId: decision.id };
      review = { decisionId: decision.id, auditTrail: decision.auditTrail };
      ctx.writes.push(() => workflow.write(decision));
      ctx.events.push(decisionEvent(decision));
    }
    ctx.writes.push(() => keys.write(record));
    ctx.events.push(keyEvent('key.created', record));
    return json(201, { ...keyView(record), key: issued.secret, review });
  },
};

/** GET /v1/keys — the keys the caller may manage, optionally one environment's. */
const list: RouteDef = {
  method: 'GET',
  path: '/v1/keys',
  operationId: 'listKeys',
  summary: 'List API keys (never their secrets).',
  scope: 'admin',
  audited: true,
  query: ListKeysQuery,
  responses: { 200: { description: 'The keys.', schema: KeyList }, 401: problemResponse('Missing or invalid API key.'), 403: problemResponse('Not an admin key.') },
  handle(ctx) {
    const { env } = ctx.queryValues as ListKeysQuery;
    const envs = manageable(principal(ctx)).filter((e) => env === undefined || e === env);
    return json(200, { data: ctx.services.keys.list(envs).map(keyView) });
  },
};

/** DELETE /v1/keys/{id} — revoke a key; it is refused from the next request on. */
const revoke: RouteDef = {
  method: 'DELETE',
  path: '/v1/keys/{id}',
  operationId: 'revokeKey',
  summary: 'Revoke an API key. Requests with it are refused (401) immediately.',
  scope: 'admin',
  audited: true,
  idempotent: true,
  responses: {
    200: { description: 'The revoked key.', schema: Key },
    401: problemResponse('Missing or invalid API key.'),
    403: problemResponse('Not an admin key.'),
    404: problemResponse('No such key (or not one this admin manages).'),
    409: problemResponse('Already revoked, or a retry is in flight.'),
  },
  handle(ctx: RequestContext) {
    const { keys, rateLimiter } = ctx.services;
    const id = ctx.params.id!;
    const existing = keys.get(id);
    if (!existing || !manageable(principal(ctx)).includes(existing.env)) throw new GatehouseError('not_found', `no key ${id}`);
    const revoked = keys.revoke(id);
    ctx.checks.push(() => keys.assertCurrent(revoked));
    ctx.writes.push(() => keys.write(revoked));
    ctx.events.push(keyEvent('key.revoked', revoked));
    rateLimiter.forget(id);
    return json(200, keyView(revoked));
  },
};

export const keyRoutes: RouteDef[] = [create, list, revoke];
