import type { AuditEntry, PolicyResultSummary } from '../audit-log.ts';
import type { DecisionRecord, DecisionStatus } from '../decision.ts';
import type { StoredEvent } from '../events/event.ts';
import type { Attempt, Delivery, DeliveryStatus } from '../webhooks/deliveries.ts';

/**
 * The ordered trace of one decision (or of a refused attempt at one): what was asked, what the
 * policy said, what the workflow did, what was announced and where it was delivered, merged
 * into one sequence of steps.
 *
 * Each step sits at the moment it was recorded: a workflow step when the workflow made it, a
 * request when its answer was ready (so just after the step it caused), an event when it was
 * committed, a webhook delivery when it was queued. Steps recorded in the same millisecond keep
 * the order request, policy evaluation, workflow step, event, delivery; then their own numbers.
 */
export interface RequestStep {
  type: 'request';
  at: string;
  /** The audit entry's number; the entry itself is in the trace's `entries`. */
  seq: number;
  requestId: string;
  keyId: string | null;
  method: string;
  route: string;
  status: number;
  code: string | null;
  replayed: boolean;
}

export interface PolicyEvaluationStep {
  type: 'policy_evaluation';
  at: string;
  /** The audit entry that recorded it. */
  seq: number;
  policy: string;
  moduleHash: string | null;
  inputDigest: string | null;
  result: PolicyResultSummary | null;
}

/** A stored step of the decision: `approval` and `execution` named apart, the rest `transition`. */
export interface WorkflowStep {
  type: 'transition' | 'approval' | 'execution';
  at: string;
  action: string;
  /** The decision's status after the step. */
  status: DecisionStatus;
  keyId: string;
  /** The approver's roles, for an approval. */
  roles: string[] | null;
  comment: string | null;
}

export interface EventStep {
  type: 'event';
  at: string;
  cursor: number;
  eventId: string;
  kind: string;
  topic: string;
}

export interface DeliveryStep {
  type: 'webhook_delivery';
  at: string;
  deliveryId: string;
  endpointId: string;
  eventId: string;
  kind: string;
  status: DeliveryStatus;
  attempts: number;
  lastAttempt: Attempt | null;
  replayOf: string | null;
}

export type TraceStep = RequestStep | PolicyEvaluationStep | WorkflowStep | EventStep | DeliveryStep;

/** What a trace says about the decision itself, when one was stored. */
export interface DecisionSummary {
  id: string;
  title: string;
  policy: string;
  moduleHash: string;
  status: DecisionStatus;
  gate: string;
  nextAction: string;
  createdAt: string;
  updatedAt: string;
}

export interface TraceSources {
  entries: readonly AuditEntry[];
  decision: DecisionRecord | undefined;
  events: readonly StoredEvent[];
  deliveries: readonly Delivery[];
}

const RANK: Record<TraceStep['type'], number> = { request: 0, policy_evaluation: 1, transition: 2, approval: 2, execution: 2, event: 3, webhook_delivery: 4 };

/**
 * A step and its sort key (what a page cursor holds): time, rank, then the step's own number
 * (audit seq, history index, event cursor) or, for a delivery, its sortable id.
 */
export interface KeyedStep {
  key: string;
  step: TraceStep;
}

/** Every step of the trace, in order. */
export function traceSteps(sources: TraceSources): KeyedStep[] {
  const keyed: KeyedStep[] = [];
  const add = (step: TraceStep, own: string | number) => {
    const tiebreak = typeof own === 'number' ? String(own).padStart(16, '0') : own;
    keyed.push({ key: `${step.at}\u0001${RANK[step.type]}\u0001${tiebreak}`, step });
  };
  for (const entry of sources.entries) {
    add(
      { type: 'request', at: entry.at, seq: entry.seq, requestId: entry.requestId, keyId: entry.keyId, method: entry.method, route: entry.route, status: entry.status, code: entry.code, replayed: entry.replayed },
      entry.seq,
    );
    if (entry.policy !== null) {
      add({ type: 'policy_evaluation', at: entry.at, seq: entry.seq, policy: entry.policy, moduleHash: entry.moduleHash, inputDigest: entry.inputDigest, result: entry.result }, entry.seq);
    }
  }
  sources.decision?.history.forEach((step, index) => {
    const approval = step.action === 'approve' ? sources.decision!.approvals.find((a) => a.keyId === step.keyId) : undefined;
    add(
      {
        type: step.action === 'approve' ? 'approval' : step.action === 'execute' ? 'execution' : 'transition',
        at: step.at,
        action: step.action,
        status: step.status,
        keyId: step.keyId,
        roles: approval ? approval.roles : null,
        comment: step.comment,
      },
      index,
    );
  });
  for (const event of sources.events) add({ type: 'event', at: event.time, cursor: event.cursor, eventId: event.id, kind: event.kind, topic: event.topic }, event.cursor);
  for (const delivery of sources.deliveries) {
    add(
      {
        type: 'webhook_delivery',
        at: delivery.createdAt,
        deliveryId: delivery.id,
        endpointId: delivery.endpointId,
        eventId: delivery.messageId,
        kind: delivery.kind,
        status: delivery.status,
        attempts: delivery.attempts.length,
        lastAttempt: delivery.attempts.at(-1) ?? null,
        replayOf: delivery.replayOf,
      },
      delivery.id,
    );
  }
  return keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

export function decisionSummary(record: DecisionRecord): DecisionSummary {
  const { id, title, policy, moduleHash, status, gate, nextAction, createdAt, updatedAt } = record;
  return { id, title, policy, moduleHash, status, gate, nextAction, createdAt, updatedAt };
}
