import { digest } from '../../core/canonical-json.ts';
import { GatehouseError } from '../../core/errors.ts';
import type { RequestContext } from '../context.ts';
import type { Reply } from '../http/reply.ts';

/**
 * Stage 4: `Idempotency-Key`. A retry of a finished request gets the stored reply, byte for
 * byte, with `Idempotent-Replayed: true`; a retry with another body is 422; one that overlaps
 * the first is 409. The key is scoped to the API key, and the fingerprint covers method, path
 * and the parsed body (so whitespace differences do not matter).
 */
const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;

export async function claimIdempotency(ctx: RequestContext): Promise<Reply | null> {
  const key = ctx.headers['idempotency-key'];
  if (key === undefined || !ctx.principal || !ctx.route) return null;
  if (!ctx.route.idempotent) {
    throw new GatehouseError('invalid_request', `${ctx.route.method} ${ctx.route.path} does not accept an Idempotency-Key`);
  }
  if (!KEY_SHAPE.test(key)) throw new GatehouseError('invalid_request', 'Idempotency-Key must be 1-255 visible ASCII characters');
  const scoped: [typeof ctx.principal.env, string, string] = [ctx.principal.env, ctx.principal.keyId, key];
  const fingerprint = digest({ body: ctx.body ?? null, method: ctx.method, path: ctx.path });
  const claim = await ctx.services.idempotency.claim(scoped, fingerprint);
  switch (claim.kind) {
    case 'in_flight':
      throw new GatehouseError('idempotency_in_flight', 'a request with this Idempotency-Key is still being processed; retry later');
    case 'mismatch':
      throw new GatehouseError('idempotency_mismatch', 'this Idempotency-Key was used with a different request');
    case 'replay':
      ctx.replayed = true;
      return { status: claim.response.status, headers: { ...claim.response.headers, 'idempotent-replayed': 'true' }, body: claim.response.body };
    case 'claimed':
      ctx.idempotency = { key: scoped, fingerprint };
      return null;
  }
}

/**
 * Queues the stored copy of the reply with the request's other writes. Server errors are not
 * stored (a retry should run again), nor is a policy's demand for a signature (the retry that
 * adds one must run); everything else the handler decided is.
 */
export function rememberReply(ctx: RequestContext, reply: Reply): void {
  const claim = ctx.idempotency;
  if (!claim || reply.status >= 500 || ctx.errorCode === 'signature_required') return;
  const { idempotency } = ctx.services;
  ctx.checks.push(() => idempotency.checkUnanswered(claim.key));
  ctx.writes.push(() => idempotency.saveInTransaction(claim.key, claim.fingerprint, reply));
}

/** Frees the claim once the reply is committed (or failed). */
export function releaseIdempotency(ctx: RequestContext): void {
  if (ctx.idempotency) ctx.services.idempotency.release(ctx.idempotency.key);
}
