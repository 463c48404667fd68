import type { DecisionRecord } from './decision.ts';
import type { Verdict } from './policy-evaluator.ts';
import type { Principal } from './principal.ts';

/**
 * Recording approvals. The policy decides whether this key may approve (separation of duties,
 * roles, duplicates) and whether the approvals now suffice: it answers `nextAction: "approve"`
 * while more are needed. This module only records the approval and reads that answer.
 */
export function withApproval(
  decision: DecisionRecord,
  principal: Principal,
  verdict: Verdict,
  comment: string | null,
  at: string,
): DecisionRecord {
  const approved = verdict.nextAction !== 'approve';
  // A copy whose existing fields are then set: see `applyAction` in core/decision-workflow.ts.
  const next = { ...decision };
  next.approvals = [...decision.approvals, { keyId: principal.keyId, roles: principal.roles, at, comment }];
  next.status = approved ? 'approved' : 'created';
  next.nextAction = verdict.nextAction;
  return next;
}
