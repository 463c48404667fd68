import { verdictSummary, type AuditDraft, type ProxiedSummary } from '../../core/audit-log.ts';
import type { DecisionRecord } from '../../core/decision.ts';
import type { ProxyExchange } from './exchange.ts';

/**
 * The one audit entry each proxied request gets: who asked for what on which route, what the
 * route policy said, and what the upstream answered and how long it took (`proxy`). Its `route`
 * is `proxy:<name>` (or `proxy:unmatched`), which keeps gateway entries apart from /v1 ones.
 * Entries of authenticated requests carry `signature`, as /v1 entries do.
 */
export type AuditedRequest = Pick<ProxyExchange, 'requestId' | 'method' | 'path' | 'principal' | 'check' | 'traceparent' | 'signatureSummary'>;

export function proxiedAuditDraft(
  request: AuditedRequest,
  routeName: string,
  reply: { status: number; code: string | null },
  proxy: Omit<ProxiedSummary, 'route'>,
  decision: Pick<DecisionRecord, 'id' | 'auditTrail'> | null = null,
): AuditDraft {
  const check = request.check;
  return {
    at: new Date().toISOString(),
    requestId: request.requestId,
    keyId: request.principal?.keyId ?? null,
    env: request.principal?.env ?? null,
    method: request.method,
    route: `proxy:${routeName}`,
    path: request.path,
    status: reply.status,
    code: reply.code,
    decisionId: decision?.id ?? null,
    traceRef: decision?.auditTrail ?? null,
    policy: check?.policy ?? null,
    moduleHash: check?.moduleHash ?? null,
    inputDigest: check?.inputDigest ?? null,
    result: check ? verdictSummary(check.verdict) : null,
    traceparent: request.traceparent,
    replayed: false,
    proxy: { outcome: proxy.outcome, route: routeName, upstreamLatencyMs: proxy.upstreamLatencyMs, upstreamStatus: proxy.upstreamStatus },
    ...(request.signatureSummary ? { signature: request.signatureSummary } : {}),
  };
}
