import type { PolicyCheck } from '../decision-workflow.ts';
import { decisionView, type DecisionAction, type DecisionRecord } from '../decision.ts';
import type { EventDraft, EventKind } from './event.ts';

/**
 * Which events the decision workflow produces. Every stored step of a decision is one event
 * named after what the step did, carrying the decision as the API shows it; every refusal by a
 * policy is a `policy.denied` event. Both are published under `decisions/{id}`.
 */

/** The topic a decision's events are published under. */
export function decisionTopic(decisionId: string): string {
  return `decisions/${decisionId}`;
}

/**
 * The event for the step a decision just took (its last history entry). `viewJson`, when the
 * caller already serialised `decisionView(record)` (the reply), is stored as the event's data.
 */
export function decisionEvent(record: DecisionRecord, viewJson?: string): EventDraft {
  const event: EventDraft = { kind: stepKind(record.history.at(-1)?.action ?? 'create', record), topic: decisionTopic(record.id), env: record.env, data: null };
  if (viewJson === undefined) event.data = decisionView(record);
  else event.dataJson = viewJson;
  return event;
}

function stepKind(action: DecisionAction, record: DecisionRecord): EventKind {
  switch (action) {
    case 'create':
      return 'decision.created';
    // An approval short of what the policy asks for is recorded; the decision is not yet approved.
    case 'approve':
      return record.status === 'approved' ? 'decision.approved' : 'decision.approval_recorded';
    case 'reject':
      return 'decision.rejected';
    case 'cancel':
      return 'decision.cancelled';
    case 'execute':
      return record.status === 'blocked' ? 'decision.blocked' : 'decision.executed';
  }
}

/**
 * A policy refused an action on `decision` (for a refused creation, the draft that was never
 * stored: subscribers of `decisions` see it, no one can follow its id).
 */
export function policyDeniedEvent(action: DecisionAction, check: PolicyCheck, decision: DecisionRecord): EventDraft {
  return {
    kind: 'policy.denied',
    topic: decisionTopic(decision.id),
    env: decision.env,
    data: {
      decisionId: decision.id,
      action,
      policy: check.policy,
      moduleHash: check.moduleHash,
      reasons: check.verdict.reasons,
      error: check.verdict.error,
      auditTrail: decision.auditTrail,
    },
  };
}

