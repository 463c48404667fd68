import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { PAGE_LIMITS } from '../core/impact/pagination.ts';

/**
 * Schemas of GET /v1/impact/trace (proxy/routes/impact.ts; core/impact/). Which one of
 * `decision`, `ref`, `input` and `objective` was given, and each one's form, are checked in the
 * route and in core/impact/impact-trace.ts so the problem can say exactly what was wrong; the
 * schema fixes the shape. The decision trace's full answer (`Trace`, with its audit entries) is
 * in proxy/schemas.ts, next to the audit entry it embeds.
 */
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const TraceQuery = Type.Object(
  {
    decision: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'A decision id (`dec_…`): its ordered trace.' })),
    ref: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'A trace reference (`trace_…`, a decision’s `auditTrail` or a refusal’s) or a decision id.' })),
    input: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'An input or context value as `namespace:name` (or its memory item id): the decisions that used it.' })),
    objective: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'An objective by id, key or title: the decisions that serve it.' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMITS.maxLimit, description: `Items per page, default ${PAGE_LIMITS.defaultLimit}.` })),
    cursor: Type.Optional(Type.String({ maxLength: 1024, description: 'The `nextCursor` of the previous page.' })),
  },
  { additionalProperties: false },
);
export type TraceQuery = Static<typeof TraceQuery>;

const PolicyResult = Type.Object({
  allow: Type.Boolean(),
  gate: Nullable(Type.String()),
  nextAction: Nullable(Type.String()),
  reasons: Type.Array(Type.String()),
  error: Nullable(Type.String()),
});

export const TraceStep = Type.Union(
  [
    Type.Object(
      {
        type: Type.Literal('request'),
        at: Type.String({ format: 'date-time' }),
        seq: Type.Integer({ description: 'The audit entry (in `entries`).' }),
        requestId: Type.String(),
        keyId: Nullable(Type.String()),
        method: Type.String(),
        route: Type.String(),
        status: Type.Integer(),
        code: Nullable(Type.String()),
        replayed: Type.Boolean(),
      },
      { description: 'A call, as its audit entry recorded it.' },
    ),
    Type.Object(
      {
        type: Type.Literal('policy_evaluation'),
        at: Type.String({ format: 'date-time' }),
        seq: Type.Integer(),
        policy: Type.String(),
        moduleHash: Nullable(Type.String()),
        inputDigest: Nullable(Type.String()),
        result: Nullable(PolicyResult),
      },
      { description: 'The policy evaluation of a call: the module that ran and what it said.' },
    ),
    Type.Object(
      {
        type: Type.Union([Type.Literal('transition'), Type.Literal('approval'), Type.Literal('execution')]),
        at: Type.String({ format: 'date-time' }),
        action: Type.String(),
        status: Type.String({ description: 'The decision’s status after the step.' }),
        keyId: Type.String(),
        roles: Nullable(Type.Array(Type.String())),
        comment: Nullable(Type.String()),
      },
      { description: 'A stored step of the decision.' },
    ),
    Type.Object(
      {
        type: Type.Literal('event'),
        at: Type.String({ format: 'date-time' }),
        cursor: Type.Integer(),
        eventId: Type.String(),
        kind: Type.String(),
        topic: Type.String(),
      },
      { description: 'An event published for the decision (the stream and webhooks carry it).' },
    ),
    Type.Object(
      {
        type: Type.Literal('webhook_delivery'),
        at: Type.String({ format: 'date-time' }),
        deliveryId: Type.String(),
        endpointId: Type.String(),
        eventId: Type.String(),
        kind: Type.String(),
        status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
        attempts: Type.Integer(),
        lastAttempt: Nullable(
          Type.Object({ at: Type.String(), status: Nullable(Type.Integer()), latencyMs: Type.Number(), error: Nullable(Type.String()), response: Nullable(Type.String()) }),
        ),
        replayOf: Nullable(Type.String()),
      },
      { description: 'A webhook delivery of one of the decision’s events.' },
    ),
  ],
  { description: 'One step of a decision’s trace; `type` says which.' },
);

export const TraceDecision = Type.Object({
  id: Type.String(),
  title: Type.String(),
  policy: Type.String(),
  moduleHash: Type.String(),
  status: Type.String(),
  gate: Type.String(),
  nextAction: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});

export const InfluenceTrace = Type.Object(
  {
    kind: Type.Union([Type.Literal('input'), Type.Literal('objective')]),
    subject: Type.Object({ id: Type.String(), namespace: Type.String(), key: Type.String(), version: Type.Integer(), text: Type.String() }),
    outcomes: Type.Record(Type.String(), Type.Integer(), { description: 'Every decision influenced, counted by status.' }),
    total: Type.Integer(),
    decisions: Type.Array(
      Type.Object({
        decisionId: Type.String(),
        title: Type.String(),
        policy: Type.String(),
        status: Type.String(),
        gate: Nullable(Type.String()),
        nextAction: Nullable(Type.String()),
        reasons: Type.Array(Type.String()),
        auditTrail: Nullable(Type.String()),
        memory: Type.Object({ id: Type.String(), version: Type.Integer() }, { description: 'The decision’s memory item version read.' }),
        link: Type.Object({ relation: Type.String(), version: Type.Integer() }, { description: 'The edge, and the subject’s version it names (the value the decision saw).' }),
      }),
    ),
    nextCursor: Nullable(Type.String()),
  },
  { description: 'What an input or objective influenced: decisions oldest first, with their outcomes.' },
);
