import type { DecisionRecord } from './decision.ts';
import type { CreateDecision, DecisionWorkflow } from './decision-workflow.ts';
import { GatehouseError } from './errors.ts';
import type { KeyRecord, KeyRegistry } from './keys.ts';
import type { EventLog } from './events/event-log.ts';
import { keyEvent } from './events/key-events.ts';
import { hasScope } from './scopes.ts';

/**
 * Production keys are governed decisions. Issuing one opens a security review (a decision under
 * `security-review-v1` in the production environment); approving that decision activates the
 * key, rejecting or cancelling it leaves the key `rejected`. Only admin keys may act on a review.
 */
export const SECURITY_REVIEW_POLICY = 'security-review-v1';

export class KeyReview {
  constructor(
    private readonly keys: KeyRegistry,
    workflow: DecisionWorkflow,
    /** Where the key's activation or rejection is recorded as an event (the server's log). */
    private readonly events?: EventLog,
  ) {
    workflow.use({
      guard: (_action, decision, principal) => {
        if (decision.subject?.type === 'key' && !hasScope(principal.scopes, 'admin')) {
          throw new GatehouseError('insufficient_scope', 'acting on a security review needs the admin scope', { required: 'admin' });
        }
      },
      written: (record) => this.settle(record),
    });
  }

  /** What the review decision for `key` says: the policy sees the scopes and roles asked for. */
  reviewRequest(key: KeyRecord): CreateDecision {
    return {
      title: `Security review: production key ${key.name ?? key.id}`,
      policy: SECURITY_REVIEW_POLICY,
      context: `Production key ${key.id} requests scopes [${key.scopes.join(', ')}] and roles [${key.roles.join(', ')}].`,
      inputs: [`key:${key.id}`],
    };
  }

  /** Moves the key along with its review; runs inside the decision's write transaction. */
  private settle(record: DecisionRecord): void {
    if (record.subject?.type !== 'key') return;
    const key = this.keys.get(record.subject.id);
    if (!key || key.status !== 'pending_review') return;
    let settled: KeyRecord;
    if (record.status === 'approved' || record.status === 'executed') settled = this.keys.withStatus(key, 'active');
    else if (record.status === 'rejected' || record.status === 'cancelled') settled = this.keys.withStatus(key, 'rejected');
    else return;
    this.keys.write(settled);
    this.events?.appendInTransaction(keyEvent(settled.status === 'active' ? 'key.activated' : 'key.rejected', settled));
  }
}
