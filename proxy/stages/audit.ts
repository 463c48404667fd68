import type { AuditDraft } from '../../core/audit-log.ts';
import type { RequestContext } from '../context.ts';
import type { Reply } from '../http/reply.ts';

/**
 * Stage 7: one audit entry per call, committed in the same LMDB transaction as the call's writes
 * (decision, key, idempotency record). The reply waits for that commit: a 200 means both are
 * stored. Concurrent requests share commits (core/store.ts), which keeps this cheap.
 */
export function auditDraft(ctx: RequestContext, reply: Reply): AuditDraft {
  const check = ctx.policyCheck;
  const decision = ctx.decision;
  return {
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
    result: check
      ? {
          allow: check.verdict.allow,
          gate: check.verdict.gate,
          nextAction: check.verdict.nextAction,
          reasons: check.verdict.reasons,
          error: check.verdict.error,
        }
      : null,
    traceparent: ctx.headers['traceparent'] ?? null,
    replayed: ctx.replayed,
  };
}

export async function commitWithAudit(ctx: RequestContext, reply: Reply): Promise<void> {
  const { store, audit, metrics } = ctx.services;
  const audited = ctx.route?.audited ?? true;
  if (!audited && ctx.writes.length === 0) return;
  const draft = audited ? auditDraft(ctx, reply) : null;
  const writes = ctx.writes;
  const started = performance.now();
  await store.commit(() => {
    for (const write of writes) write();
    if (draft) audit.appendInTransaction(draft);
  });
  metrics.auditAppend.observe((performance.now() - started) / 1000);
}
