import { Type, type TSchema } from '@sinclair/typebox';
import type { EventKind } from '../core/events/event.ts';
import { AuditEntry, Decision, Key, Nullable } from './schemas.ts';
import { WebhookEndpoint } from './webhook-schemas.ts';

/**
 * What each event carries as `data`, on the stream and in webhook messages (core/events/,
 * core/webhooks/payload.ts). They feed the OpenAPI document's `webhooks`; the record below is
 * keyed by every event kind, so a new kind does not compile until its payload is described.
 */

export const PolicyDeniedEvent = Type.Object({
  decisionId: Type.String({ description: 'For a refused creation, the id of a draft that was never stored.' }),
  action: Type.Union(['create', 'approve', 'reject', 'execute', 'cancel'].map((a) => Type.Literal(a))),
  policy: Type.String(),
  moduleHash: Type.String(),
  reasons: Type.Array(Type.String()),
  error: Nullable(Type.String()),
  auditTrail: Type.String(),
});

export const ToolCallEvent = Type.Object({
  agentId: Type.String(),
  runId: Type.String(),
  callId: Type.String(),
  index: Type.Integer(),
  tool: Type.String(),
  action: Type.Union([Type.Literal('tool_call'), Type.Literal('rollback')]),
  stage: Type.Union(['TOOL_CALL', 'POLICY_CHECK', 'HUMAN_APPROVAL', 'EXECUTE'].map((s) => Type.Literal(s))),
  state: Type.Union(['denied', 'held', 'executing', 'executed', 'failed', 'withdrawn'].map((s) => Type.Literal(s))),
  decisionId: Nullable(Type.String()),
  policy: Type.String(),
  reasons: Type.Array(Type.String()),
  status: Nullable(Type.Integer({ description: 'The tool’s HTTP status, once it answered.' })),
});

export const RunStoppedEvent = Type.Object({
  agentId: Type.String(),
  runId: Type.String(),
  state: Type.Union([Type.Literal('open'), Type.Literal('stopped'), Type.Literal('rolled_back')]),
  reason: Nullable(Type.String()),
});

export const WebhookTestEvent = Type.Object({ endpointId: Type.String(), message: Type.String() });

const toolCall = (what: string) => ({ data: ToolCallEvent, summary: `An agent's tool call ${what}.` });

/** `webhook.test` is sent only to the endpoint that asked for it (POST /v1/webhooks/config/{id}/test). */
export const EVENT_PAYLOADS: Record<EventKind | 'webhook.test', { data: TSchema; summary: string }> = {
  'decision.created': { data: Decision, summary: 'A decision was created (its gate says what it waits for).' },
  'decision.approval_recorded': { data: Decision, summary: 'An approval was recorded; the policy asks for more.' },
  'decision.approved': { data: Decision, summary: 'A decision has every approval it needs.' },
  'decision.rejected': { data: Decision, summary: 'A decision was rejected.' },
  'decision.executed': { data: Decision, summary: 'A decision was executed.' },
  'decision.cancelled': { data: Decision, summary: 'A decision was cancelled.' },
  'decision.blocked': { data: Decision, summary: 'The policy refused to execute a decision.' },
  'policy.denied': { data: PolicyDeniedEvent, summary: 'A policy refused an action on a decision.' },
  'key.created': { data: Key, summary: 'An API key was issued.' },
  'key.activated': { data: Key, summary: 'A production key passed its security review.' },
  'key.rejected': { data: Key, summary: 'A production key failed its security review.' },
  'key.revoked': { data: Key, summary: 'An API key was revoked.' },
  'audit.appended': { data: AuditEntry, summary: 'An audit entry was recorded in this environment.' },
  'webhook.endpoint_disabled': { data: WebhookEndpoint, summary: 'An endpoint was disabled after failing too many deliveries in a row.' },
  'webhook.test': { data: WebhookTestEvent, summary: 'A test message an operator asked for.' },
  'agent.tool_call.requested': toolCall('was requested (TOOL_CALL)'),
  'agent.tool_call.allowed': toolCall('was allowed by its policy or a human'),
  'agent.tool_call.denied': toolCall('was denied by its policy or a human'),
  'agent.tool_call.held': toolCall('waits for a human (HUMAN_APPROVAL)'),
  'agent.tool_call.executed': toolCall('was executed'),
  'agent.tool_call.failed': toolCall('failed at the tool'),
  'agent.tool_call.compensated': toolCall('was rolled back by its compensating action'),
  'agent.run.stopped': { data: RunStoppedEvent, summary: 'A run was stopped by one of its limits.' },
};

/** A webhook message body (Standard Webhooks' `type`, `timestamp`, `data`, plus the event's place in the log). */
export function webhookMessage(kind: string, data: TSchema): TSchema {
  return Type.Object({
    type: Type.Literal(kind),
    timestamp: Type.String({ format: 'date-time' }),
    data,
    cursor: Type.Optional(Type.Integer({ description: 'The event’s position in the log; absent on `webhook.test`.' })),
    topic: Type.Optional(Type.String({ description: 'The stream topic the event was published under.' })),
  });
}
