import type { Env } from '../env.ts';

/**
 * What happened, as subscribers and webhook endpoints see it. Every event belongs to one
 * environment and one topic path (`decisions/dec_…`, `keys/key_…`, `audit`); its `cursor` is its
 * position in the event log (core/events/event-log.ts), unique and increasing across the store.
 */
export const EVENT_KINDS = [
  'decision.created',
  'decision.approval_recorded',
  'decision.approved',
  'decision.rejected',
  'decision.executed',
  'decision.cancelled',
  'decision.blocked',
  'policy.denied',
  'key.created',
  'key.activated',
  'key.rejected',
  'key.revoked',
  'audit.appended',
  'webhook.endpoint_disabled',
  'agent.tool_call.requested',
  'agent.tool_call.allowed',
  'agent.tool_call.denied',
  'agent.tool_call.held',
  'agent.tool_call.executed',
  'agent.tool_call.failed',
  'agent.tool_call.compensated',
  'agent.run.stopped',
] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

/** An event before the log numbers it: what a handler or a core rule produces. */
export interface EventDraft {
  kind: EventKind;
  topic: string;
  env: Env;
  /** What happened; read back from the audit log when the event reports an audit entry (`auditSeq`). */
  data: unknown;
  /**
   * `data` already serialised as JSON (the reply that carried it, for a decision's step): the log
   * stores this text instead of serialising `data` again.
   */
  dataJson?: string;
  /**
   * The audit entry the event reports (`audit.appended`). The event stores this reference, not a
   * copy: the entry is written once, in the same transaction, and never changes.
   */
  auditSeq?: number;
}

/**
 * An event as the log hands it to readers (the stream, the webhook fan-out, impact traces): its
 * data as JSON text, which is what every reader sends on.
 */
export interface StoredEvent {
  cursor: number;
  /** `evt_…`, also the `webhook-id` of its deliveries (the same across retries and replays). */
  id: string;
  /** ISO 8601, when it was committed. */
  time: string;
  kind: EventKind;
  topic: string;
  env: Env;
  dataJson: string;
}
