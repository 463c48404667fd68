import type { DecisionAction, DecisionRecord, DecisionStatus } from './decision.ts';
import { GatehouseError } from './errors.ts';

/**
 * Which action may follow which status. Anything else is a 409 `invalid_transition`, decided
 * before the policy is asked: the policy governs who may act and when, not the shape of the
 * workflow. Within these bounds the policy has the last word: executing a decision it has not
 * cleared is asked of it, and its refusal blocks the decision.
 *
 * Approving needs a decision waiting for approval (`nextAction: "approve"`); nothing can be
 * executed once the policy said there is nothing left to do (`nextAction: "none"`).
 */
const ALLOWED: Record<Exclude<DecisionAction, 'create'>, readonly DecisionStatus[]> = {
  approve: ['created', 'blocked'],
  reject: ['created', 'blocked'],
  execute: ['created', 'approved', 'blocked'],
  cancel: ['created', 'approved', 'blocked'],
};

export function assertTransition(decision: DecisionRecord, action: Exclude<DecisionAction, 'create'>): void {
  const refuse = (why: string) =>
    new GatehouseError('invalid_transition', why, { decisionId: decision.id, decisionStatus: decision.status, nextAction: decision.nextAction });
  if (!ALLOWED[action].includes(decision.status)) throw refuse(`cannot ${action} a decision that is ${decision.status}`);
  if (action === 'approve' && decision.nextAction !== 'approve') {
    throw refuse(`this decision is not waiting for approval (next action: ${decision.nextAction})`);
  }
  if (action === 'execute' && decision.nextAction === 'none') throw refuse('this decision has nothing left to execute');
}
