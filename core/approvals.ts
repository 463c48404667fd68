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
  return {
    ...decision,
    approvals: [...decision.approvals, { keyId: principal.keyId, roles: principal.roles, at, comment }],
    status: approved ? 'approved' : 'created',
    nextAction: verdict.nextAction,
  };
}
