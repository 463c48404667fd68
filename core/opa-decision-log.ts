import type { AuditEntry, AuditLog } from './audit-log.ts';
import { decodedEntries } from './audit-export.ts';

/**
 * The audit log's policy evaluations as OPA decision-log events (OPA's "Decision Logs" page), one
 * JSON object a line, so tools that read OPA's decision logs read Gatehouse's:
 *
 *   {"decision_id","path","input","result","timestamp","labels","bundles","requested_by",
 *    "trace_id","span_id","error"}
 *
 * Only entries where a policy was asked become events: OPA logs decisions, not every call. The
 * audit entry keeps the input's SHA-256 rather than the input (decisions' context may be large
 * or sensitive), so `input` holds the facts the entry records — principal, request, decision —
 * and `labels.input_digest` names the full input. Gatehouse names policies rather than rule
 * paths, so `path` is the policy's name and `bundles` maps it to the module that ran. OPA's
 * `metrics` are left out: the entry does not record the evaluation's time (the Prometheus
 * histogram gatehouse_policy_evaluation_duration_seconds does).
 */
export interface OpaDecisionEvent {
  decision_id: string;
  path: string;
  input: {
    principal: { keyId: string | null; env: string | null };
    request: { method: string; path: string; signature?: AuditEntry['signature'] };
    decision?: { id: string };
  };
  result: NonNullable<AuditEntry['result']>;
  timestamp: string;
  labels: Record<string, string>;
  bundles: Record<string, { revision: string }>;
  requested_by?: string;
  trace_id?: string;
  span_id?: string;
  error?: { code: string; message: string };
}

/** The event for one audit entry, or null when no policy was asked during it. */
export function opaDecisionEvent(entry: AuditEntry, labels: Record<string, string>): OpaDecisionEvent | null {
  const { policy, result } = entry;
  if (policy === null || result === null) return null;
  const request: OpaDecisionEvent['input']['request'] = { method: entry.method, path: entry.path };
  if (entry.signature) request.signature = entry.signature;
  const event: OpaDecisionEvent = {
    decision_id: entry.requestId,
    path: policy,
    input: { principal: { keyId: entry.keyId, env: entry.env }, request },
    result,
    timestamp: entry.at,
    labels: { ...labels, audit_seq: String(entry.seq), audit_hash: entry.hash, status: String(entry.status) },
    bundles: { [policy]: { revision: entry.moduleHash ?? 'unknown' } },
  };
  if (entry.decisionId) event.input.decision = { id: entry.decisionId };
  if (entry.inputDigest) event.labels.input_digest = entry.inputDigest;
  if (entry.keyId) event.requested_by = entry.keyId;
  // W3C traceparent: version-traceid-parentid-flags.
  const trace = entry.traceparent?.split('-');
  if (trace?.length === 4) {
    event.trace_id = trace[1]!;
    event.span_id = trace[2]!;
  }
  if (result.error !== null) event.error = { code: 'eval_error', message: result.error };
  return event;
}

/** Every policy evaluation in the log, oldest first, as NDJSON lines; one read snapshot. */
export function* opaDecisionLines(audit: AuditLog, labels: Record<string, string>): Generator<{ kind: 'decision'; line: string }, void, undefined> {
  const snapshot = audit.snapshot();
  try {
    for (const entry of decodedEntries(audit, snapshot)) {
      const event = opaDecisionEvent(entry, labels);
      if (event) yield { kind: 'decision', line: JSON.stringify(event) };
    }
  } finally {
    snapshot.done();
  }
}
