import { GatehouseError } from '../core/errors.ts';
import type { RequestContext } from './context.ts';
import type { Reply } from './http/reply.ts';
import type { RouteDef } from './route.ts';
import { commitWithAudit } from './stages/audit.ts';
import { authenticate } from './stages/authenticate.ts';
import { emit } from './stages/emit.ts';
import { claimIdempotency, releaseIdempotency, rememberReply } from './stages/idempotency.ts';
import { parseBody } from './stages/parse-body.ts';
import { refuse } from './stages/refuse.ts';
import { evaluatePolicy } from './stages/policy.ts';
import { rateLimit } from './stages/rate-limit.ts';
import { throttleUnauthenticated } from './stages/throttle-unauthenticated.ts';
import { verifySignature } from './stages/verify-signature.ts';
import { log } from '../core/log.ts';

/**
 * The request lifecycle, in a fixed order, each stage with one job:
 *
 *   authenticate → verify signature → rate limit → (validate) → idempotency → policy → handler
 *   → audit → emit
 *
 * Any stage may refuse by throwing a GatehouseError; the refusal becomes a problem document and
 * still goes through audit and emit, unless its caller is unauthenticated and over its address's
 * limit (proxy/stages/throttle-unauthenticated.ts). Nothing is written before the audit stage,
 * which commits the call's writes and its audit entry together.
 */
export async function runPipeline(ctx: RequestContext): Promise<Reply> {
  let reply: Reply;
  try {
    reply = await decide(ctx);
  } catch (error) {
    reply = refuse(ctx, error);
  }
  const throttled = throttleUnauthenticated(ctx, reply);
  if (throttled) return withStageHeaders(ctx, throttled);
  ctx.trace?.mark('commit');
  try {
    reply = await commitWithAudit(ctx, reply);
  } catch (error) {
    // Refused by the cluster (core/store.ts): nothing was written, and the caller may retry.
    const unavailable = error instanceof GatehouseError && error.code === 'not_ready';
    if (!unavailable) log.error({ requestId: ctx.requestId, err: error }, 'could not commit');
    ctx.checks = [];
    ctx.writes = [];
    ctx.events = [];
    reply = refuse(ctx, unavailable ? error : new GatehouseError('internal', 'the request could not be recorded'));
    // The refusal's own audit entry would wait on the same unavailable cluster: answer at once.
    if (!unavailable) await commitWithAudit(ctx, reply).catch(() => {});
  } finally {
    releaseIdempotency(ctx);
  }
  ctx.trace?.mark('emit');
  emit(ctx);
  return withStageHeaders(ctx, reply);
}

function withStageHeaders(ctx: RequestContext, reply: Reply): Reply {
  return { status: reply.status, headers: Object.assign({}, reply.headers, ctx.responseHeaders), body: reply.body };
}

async function decide(ctx: RequestContext): Promise<Reply> {
  if (ctx.malformed !== null) {
    ctx.closeConnection = true;
    throw new GatehouseError('invalid_request', ctx.malformed);
  }
  if (ctx.lateForShutdown) {
    ctx.closeConnection = true;
    throw new GatehouseError('not_ready', 'the server is shutting down; retry against another instance');
  }
  const route = ctx.route;
  if (!route) {
    if (ctx.allowed.length) {
      ctx.responseHeaders['allow'] = ctx.allowed.join(', ');
      throw new GatehouseError('method_not_allowed', `${ctx.method} is not allowed here; use ${ctx.allowed.join(' or ')}`);
    }
    throw new GatehouseError('not_found', `no route for ${ctx.method} ${ctx.path}`);
  }
  ctx.trace?.mark('authenticate');
  await authenticate(ctx);
  ctx.trace?.mark('verify-signature');
  await verifySignature(ctx);
  ctx.trace?.mark('rate-limit');
  rateLimit(ctx);
  ctx.trace?.mark('validate');
  parseBody(ctx);
  ctx.trace?.mark('idempotency');
  const replay = ctx.headers['idempotency-key'] === undefined ? null : await claimIdempotency(ctx);
  if (replay) return replay;
  try {
    if (route.readsMemory) await ctx.services.memory.written();
    const reply = await judgeAndHandle(ctx, route);
    rememberReply(ctx, reply);
    return reply;
  } catch (error) {
    // What the policy or handler refused is the request's outcome: a retry gets the same refusal.
    const reply = refuse(ctx, error);
    rememberReply(ctx, reply);
    return reply;
  }
}

/**
 * The policy and handler stages. In cluster mode a record this instance does not hold may have
 * been written through another instance just before, its commit not applied here yet: the
 * instance then catches up with the cluster and runs both stages once more, so a caller who had
 * A's answer finds the record on B. Nothing is written before the audit stage, so running them
 * again costs only the work.
 */
async function judgeAndHandle(ctx: RequestContext, route: RouteDef): Promise<Reply> {
  try {
    ctx.trace?.mark('policy');
    evaluatePolicy(ctx);
    ctx.trace?.mark('handler');
    return await route.handle(ctx);
  } catch (error) {
    const catchUp = ctx.services.catchUp;
    if (!catchUp || !(error instanceof GatehouseError) || error.code !== 'not_found') throw error;
    ctx.checks = [];
    ctx.writes = [];
    ctx.events = [];
    ctx.decision = null;
    ctx.draft = null;
    ctx.policyCheck = null;
    await catchUp().catch((failure: unknown) => {
      throw new GatehouseError('not_ready', `this instance could not catch up with the cluster to look for it (${(failure as Error).message}); retry`);
    });
    evaluatePolicy(ctx);
    return await route.handle(ctx);
  }
}
