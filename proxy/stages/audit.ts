import { verdictSummary, type AuditDraft } from '../../core/audit-log.ts';
import { auditEvent } from '../../core/events/audit-events.ts';
import type { RequestContext } from '../context.ts';
import type { Reply } from '../http/reply.ts';
import { ID_MAX_LENGTH } from '../id-schema.ts';
import { refuse } from './refuse.ts';

/**
 * Stage 7: one audit entry per call, committed in the same LMDB transaction as the call's writes
 * (decision, key, idempotency record) and its events (core/events/), the entry's own included. The reply waits for that commit: a 200 means both are
 * stored. Concurrent requests share commits (core/store.ts), which keeps this cheap.
 */
export function auditDraft(ctx: RequestContext, reply: Reply): AuditDraft {
  const check = ctx.policyCheck;
  const decision = ctx.decision ?? decisionNamed(ctx);
  const draft: AuditDraft = {
    at: new Date().toISOString(),
    requestId: ctx.requestId,
    keyId: ctx.principal?.keyId ?? null,
    env: ctx.principal?.env ?? null,
    method: ctx.method,
    route: ctx.routeLabel,
    path: ctx.path,
    status: reply.status,
    code: ctx.errorCode,
    decisionId: decision?.id ?? null,
    traceRef: decision?.auditTrail ?? ctx.draft?.auditTrail ?? null,
    policy: check?.policy ?? null,
    moduleHash: check?.moduleHash ?? null,
    inputDigest: check?.inputDigest ?? null,
    result: check ? verdictSummary(check.verdict) : null,
    traceparent: ctx.headers['traceparent'] ?? null,
    replayed: ctx.replayed,
  };
  if (ctx.signatureSummary) draft.signature = ctx.signatureSummary;
  return draft;
}

/**
 * The decision a call on `/v1/decisions/{id}…` names, when the call was refused (or replayed)
 * before its handler loaded it: a missing scope, a bad body, the rate limit, an idempotent
 * replay. Recorded under the decision's trace reference, every attempt against a decision is in
 * its impact trace, not only those that reached its policy.
 */
function decisionNamed(ctx: RequestContext) {
  const id = ctx.params.id;
  if (!ctx.principal || id === undefined || !ctx.route?.path.startsWith('/v1/decisions/{id}')) return null;
  // A refusal may come before validation bounded the id: one too long for an LMDB key names no decision.
  if (id.length > ID_MAX_LENGTH) return null;
  return ctx.services.workflow.decisions.get(ctx.principal.env, id) ?? null;
}

/**
 * Commits the call's writes, events and audit entry in one transaction and returns the reply as
 * committed. The request's checks run first, before anything is written: one that fails (a
 * record changed since the request read it, core/revision.ts) turns the reply into its refusal
 * and drops the request's writes and events, so only the refusal's audit entry is stored. An
 * idempotent request refused this way stores no reply: its retry runs again.
 */
export async function commitWithAudit(ctx: RequestContext, reply: Reply): Promise<Reply> {
  const { store, audit, events, metrics } = ctx.services;
  const audited = ctx.route?.audited ?? true;
  if (!audited && ctx.writes.length === 0 && ctx.events.length === 0) return reply;
  let committed = reply;
  const started = performance.now();
  await store.commit(() => {
    try {
      for (const check of ctx.checks) check();
    } catch (error) {
      committed = refuse(ctx, error);
      ctx.writes = [];
      ctx.events = [];
    }
    // Events first: a step's own event precedes what it sets off (a review approval, then the key's activation).
    for (const event of ctx.events) events.appendInTransaction(event);
    for (const write of ctx.writes) write();
    if (!audited) return;
    const recorded = auditEvent(audit.appendInTransaction(auditDraft(ctx, committed)));
    if (recorded) events.appendInTransaction(recorded);
  });
  metrics.auditAppend.observe((performance.now() - started) / 1000);
  return committed;
}
