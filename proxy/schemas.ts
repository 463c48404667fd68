import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { SCOPES } from '../core/scopes.ts';
import { TraceDecision, TraceStep } from './impact-schemas.ts';

/**
 * The API's schemas. Request schemas validate bodies and queries (proxy/validation.ts); all of
 * them, response schemas included, feed the OpenAPI document (proxy/openapi.ts), so the document
 * cannot drift from what the server enforces.
 */

/** `<namespace>:<name>`, e.g. `finance:budget_q3`. */
export const Label = Type.String({
  pattern: '^[a-z0-9][a-z0-9_.-]{0,63}:[A-Za-z0-9_./-]{1,191}$',
  description: 'A `<namespace>:<name>` label.',
  examples: ['finance:budget_q3'],
});

export const ContextEntry = Type.Object(
  { source: Label, value: Type.Number({ description: 'A finite number.' }) },
  { additionalProperties: false },
);

/** 64 KiB of text; the byte length is checked too (proxy/validation.ts). */
export const CONTEXT_TEXT_MAX_BYTES = 64 * 1024;

export const Context = Type.Union([
  Type.String({ maxLength: CONTEXT_TEXT_MAX_BYTES, description: 'Free text, at most 64 KiB of UTF-8.' }),
  Type.Array(ContextEntry, { maxItems: 1000, description: 'At most 1,000 labelled values, each source once.' }),
]);

export const CreateDecisionBody = Type.Object(
  {
    title: Type.String({ minLength: 1, maxLength: 256 }),
    policy: Type.String({ minLength: 1, maxLength: 128, description: 'The name (with version suffix) of a loaded policy.' }),
    context: Context,
    inputs: Type.Optional(Type.Array(Label, { maxItems: 100, uniqueItems: true })),
    objectives: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 256, description: 'An objective’s id, key or title.' }), { maxItems: 100, uniqueItems: true }),
    ),
  },
  { additionalProperties: false },
);
export type CreateDecisionBody = Static<typeof CreateDecisionBody>;

export const ActionBody = Type.Object({ comment: Type.Optional(Type.String({ maxLength: 4096 })) }, { additionalProperties: false });
export type ActionBody = Static<typeof ActionBody>;

export const EnvName = Type.Union([Type.Literal('sandbox'), Type.Literal('production')]);
export const ScopeName = Type.Union(SCOPES.map((s) => Type.Literal(s)));
export const Role = Type.String({ pattern: '^[a-z0-9][a-z0-9_.:-]{0,63}$' });

export const CreateKeyBody = Type.Object(
  {
    env: EnvName,
    scopes: Type.Array(ScopeName, { minItems: 1, maxItems: SCOPES.length, uniqueItems: true }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    roles: Type.Optional(Type.Array(Role, { maxItems: 32, uniqueItems: true })),
  },
  { additionalProperties: false },
);
export type CreateKeyBody = Static<typeof CreateKeyBody>;

export const DecisionStatusName = Type.Union(
  ['created', 'approved', 'rejected', 'executed', 'cancelled', 'blocked'].map((s) => Type.Literal(s)),
);

/** What a decision list or count selects: exact matches, and `q` within the title. */
const DecisionSelection = {
  status: Type.Optional(DecisionStatusName),
  policy: Type.Optional(Type.String({ maxLength: 128 })),
  gate: Type.Optional(Type.String({ maxLength: 128 })),
  nextAction: Type.Optional(Type.String({ maxLength: 128 })),
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'A case-insensitive substring of the title.' })),
};

export const ListDecisionsQuery = Type.Object(
  {
    ...DecisionSelection,
    order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')], { default: 'asc', description: '`asc`: oldest first; `desc`: newest first.' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
    cursor: Type.Optional(Type.String({ maxLength: 512 })),
  },
  { additionalProperties: false },
);
export type ListDecisionsQuery = Static<typeof ListDecisionsQuery>;

export const DecisionCountsQuery = Type.Object(DecisionSelection, { additionalProperties: false });
export type DecisionCountsQuery = Static<typeof DecisionCountsQuery>;

const Tally = Type.Record(Type.String(), Type.Integer());
export const DecisionCounts = Type.Object({
  total: Type.Integer({ description: 'How many decisions the selection lists.' }),
  status: Tally,
  gate: Tally,
  nextAction: Tally,
  policy: Tally,
});

export const ListKeysQuery = Type.Object({ env: Type.Optional(EnvName) }, { additionalProperties: false });
export type ListKeysQuery = Static<typeof ListKeysQuery>;

// Responses (documentation only).

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const Decision = Type.Object({
  id: Type.String(),
  title: Type.String(),
  policy: Type.String(),
  moduleHash: Type.String(),
  context: Context,
  inputs: Type.Array(Label),
  objectives: Type.Array(Type.String()),
  status: DecisionStatusName,
  gate: Type.String({ description: 'What holds the decision, as the policy said: `auto`, `human_approval`, `security_review`, …' }),
  nextAction: Type.String({ description: '`approve`, `execute` or `none`.' }),
  reasons: Type.Array(Type.String()),
  requiredApprovals: Type.Object({ roles: Type.Array(Type.String()), count: Type.Integer() }),
  approvals: Type.Array(
    Type.Object({ keyId: Type.String(), roles: Type.Array(Type.String()), at: Type.String(), comment: Nullable(Type.String()) }),
  ),
  history: Type.Array(
    Type.Object({ action: Type.String(), keyId: Type.String(), at: Type.String(), status: Type.String(), comment: Nullable(Type.String()) }),
  ),
  createdBy: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
  auditTrail: Type.String({ description: 'Trace reference resolvable with GET /v1/impact/trace.' }),
  revision: Type.Integer({
    minimum: 0,
    description: 'The stored version, 1 when created and one more per action; an action on a decision another request changed after it was read is refused with 409 `conflict`.',
  }),
  subject: Nullable(Type.Object({ type: Type.Union([Type.Literal('key'), Type.Literal('proxy-request'), Type.Literal('agent-tool-call')]), id: Type.String() })),
});

export const DecisionPage = Type.Object({ data: Type.Array(Decision), nextCursor: Nullable(Type.String()) });

export const Key = Type.Object({
  id: Type.String(),
  env: EnvName,
  name: Nullable(Type.String()),
  scopes: Type.Array(Type.String()),
  roles: Type.Array(Type.String()),
  status: Type.Union(['active', 'pending_review', 'revoked', 'rejected'].map((s) => Type.Literal(s))),
  createdAt: Type.String({ format: 'date-time' }),
  createdBy: Nullable(Type.String()),
  reviewDecisionId: Nullable(Type.String()),
});

export const CreatedKey = Type.Intersect([
  Key,
  Type.Object({
    key: Type.String({ description: 'The secret. Shown once; only its hash is kept.' }),
    review: Nullable(Type.Object({ decisionId: Type.String(), auditTrail: Type.String() })),
  }),
]);

export const KeyList = Type.Object({ data: Type.Array(Key) });

export const AuditEntry = Type.Object({
  seq: Type.Integer(),
  at: Type.String({ format: 'date-time' }),
  requestId: Type.String(),
  keyId: Nullable(Type.String()),
  env: Nullable(EnvName),
  method: Type.String(),
  route: Type.String(),
  path: Type.String(),
  status: Type.Integer(),
  code: Nullable(Type.String()),
  decisionId: Nullable(Type.String()),
  traceRef: Nullable(Type.String()),
  policy: Nullable(Type.String()),
  moduleHash: Nullable(Type.String()),
  inputDigest: Nullable(Type.String()),
  result: Nullable(
    Type.Object({
      allow: Type.Boolean(),
      gate: Nullable(Type.String()),
      nextAction: Nullable(Type.String()),
      reasons: Type.Array(Type.String()),
      error: Nullable(Type.String()),
    }),
  ),
  traceparent: Nullable(Type.String()),
  replayed: Type.Boolean(),
  proxy: Type.Optional(
    Type.Object({
      route: Type.String(),
      outcome: Type.Union(['forwarded', 'denied', 'held', 'sent', 'failed'].map((o) => Type.Literal(o))),
      upstreamStatus: Nullable(Type.Integer()),
      upstreamLatencyMs: Nullable(Type.Number()),
    }),
  ),
  signature: Type.Optional(
    Type.Object({
      outcome: Type.Union(['verified', 'failed', 'unsigned', 'bootstrap'].map((o) => Type.Literal(o))),
      label: Nullable(Type.String()),
      keyId: Nullable(Type.String()),
      alg: Nullable(Type.String()),
      failure: Nullable(Type.String()),
      session: Type.Optional(Type.Literal(true, { description: 'The signature was made with the key of the console session that authenticated the request.' })),
    }),
  ),
  prevHash: Type.String(),
  hash: Type.String(),
});

/** A decision's ordered trace, one page of it (GET /v1/impact/trace; proxy/impact-schemas.ts has its steps). */
export const Trace = Type.Object({
  kind: Type.Literal('decision'),
  ref: Type.String(),
  decisionId: Nullable(Type.String()),
  decision: Nullable(TraceDecision),
  entries: Type.Array(AuditEntry, { description: 'The audit entries of this page’s `request` steps, in full.' }),
  steps: Type.Array(TraceStep),
  nextCursor: Nullable(Type.String()),
});

export const Problem = Type.Object({
  type: Type.String(),
  title: Type.String(),
  status: Type.Integer(),
  detail: Type.String(),
  code: Type.String(),
  requestId: Type.String(),
});

export const Health = Type.Object({ status: Type.String() });

export const Readiness = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('degraded')], { description: '`degraded`: some policy files are not loaded, or (in cluster mode) other instances serve other policies.' }),
  policies: Type.Array(Type.String(), { description: 'The loaded policies.' }),
  notLoaded: Type.Array(Type.Object({ file: Type.String(), reason: Type.String({ description: 'Compile errors at file:line:col, or why the module did not load.' }) })),
  clusterDifferences: Type.Optional(
    Type.Array(
      Type.Object({
        node: Type.String({ description: 'The other instance (GATEHOUSE_NODE_ID).' }),
        missing: Type.Array(Type.String(), { description: 'Policies loaded here and not there.' }),
        extra: Type.Array(Type.String(), { description: 'Policies loaded there and not here.' }),
        changed: Type.Array(Type.String(), { description: 'Policies loaded in both from different modules.' }),
      }),
      { description: 'Cluster mode: the other instances whose loaded policies differ from this one’s (docs/cluster.md). Present only when some do; the status is then `degraded`.' },
    ),
  ),
});
