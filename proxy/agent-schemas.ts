import { Type, type Static } from '@sinclair/typebox';
import { MAX_TOOL_CALLS } from '../core/agents/limits.ts';
import { Id } from './id-schema.ts';
import { Nullable } from './schemas.ts';

/**
 * Schemas of the governed-agents API (proxy/routes/agents.ts, docs/agents.md): they validate
 * requests and describe responses in the OpenAPI document. A tool's `inputSchema` is itself a
 * JSON Schema, checked by core/agents/input-schema.ts (ajv), not here.
 */
const Name = Type.String({ pattern: '^[a-z][a-z0-9_-]{0,63}$', description: 'Lowercase letters, digits, `_` and `-`.' });
const ToolScope = Type.String({ pattern: '^[a-z][a-z0-9_.-]{0,63}(:[a-z0-9_.*-]{1,64})?$', examples: ['payments:write'] });
const Method = Type.Union([Type.Literal('POST'), Type.Literal('PUT'), Type.Literal('PATCH')]);
const Endpoint = Type.Object(
  {
    method: Method,
    url: Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://' }),
    timeoutMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 120_000, description: 'Default 10,000.' })),
  },
  { additionalProperties: false },
);

export const RegisterToolBody = Type.Object(
  {
    name: Name,
    description: Type.String({ maxLength: 1024 }),
    inputSchema: Type.Record(Type.String(), Type.Unknown(), { description: 'A JSON Schema of `"type": "object"` for the call input.' }),
    upstream: Endpoint,
    scopes: Type.Array(ToolScope, { maxItems: 32 }),
    policy: Type.String({ minLength: 1, maxLength: 128, description: 'The loaded policy (with version suffix) that judges each call.' }),
    compensate: Type.Optional(Endpoint),
    spendField: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'The top-level input property holding what a call spends.' })),
  },
  { additionalProperties: false },
);
export type RegisterToolBody = Static<typeof RegisterToolBody>;

const EndpointView = Type.Object({ method: Type.String(), url: Type.String(), timeoutMs: Type.Integer() });

export const Tool = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  inputSchema: Type.Record(Type.String(), Type.Unknown()),
  upstream: EndpointView,
  compensate: Nullable(EndpointView),
  scopes: Type.Array(Type.String()),
  policy: Type.String(),
  spendField: Nullable(Type.String()),
  createdBy: Type.String(),
  createdAt: Type.String(),
});

export const ToolList = Type.Object({ data: Type.Array(Tool) });

export const RegisterAgentBody = Type.Object(
  { name: Name, scopes: Type.Array(ToolScope, { maxItems: 64 }), tools: Type.Array(Name, { maxItems: 128 }) },
  { additionalProperties: false },
);
export type RegisterAgentBody = Static<typeof RegisterAgentBody>;

export const Agent = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  tools: Type.Array(Type.String()),
  createdBy: Type.String(),
  createdAt: Type.String(),
});

export const OpenRunBody = Type.Object(
  {
    agentId: Id({ description: 'The agent to run (`agt_…`).' }),
    limits: Type.Optional(
      Type.Object(
        {
          maxToolCalls: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TOOL_CALLS, description: 'Default 50.' })),
          maxSpend: Type.Optional(Type.Number({ minimum: 0, description: 'Default 10,000.' })),
          maxWallMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 24 * 3600 * 1000, description: 'Default 15 minutes.' })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type OpenRunBody = Static<typeof OpenRunBody>;

export const ToolCallBody = Type.Object(
  { tool: Name, input: Type.Record(Type.String(), Type.Unknown(), { description: 'Validated against the tool’s inputSchema.' }) },
  { additionalProperties: false },
);
export type ToolCallBody = Static<typeof ToolCallBody>;

/** Paging through a run's steps (the trace, replay): the steps after index `after`, `limit` at most. */
export const STEP_PAGE = 100;
const StepPaging = {
  after: Type.Optional(Type.Integer({ minimum: 0, description: 'Steps after this index (default 0: from the first); a page’s `nextAfter`.' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: STEP_PAGE })),
};

export const StepPageQuery = Type.Object(StepPaging, { additionalProperties: false });
export type StepPageQuery = Static<typeof StepPageQuery>;

export const ReplayBody = Type.Object(
  {
    policy: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'A loaded policy version; default: the one each step was judged by.' })),
    ...StepPaging,
  },
  { additionalProperties: false },
);
export type ReplayBody = Static<typeof ReplayBody>;

const NextAfter = Nullable(Type.Integer({ description: 'The `after` of the next page; null on the last.' }));

const Verdict = Type.Object({ policy: Type.String(), moduleHash: Type.String(), allow: Type.Boolean(), gate: Type.String(), reasons: Type.Array(Type.String()) });

export const ReplayResult = Type.Object({
  runId: Type.String(),
  policy: Nullable(Type.String()),
  changed: Type.Integer({ description: 'Steps of this page whose verdict changed.' }),
  steps: Type.Array(Type.Object({ step: Type.Integer(), callId: Type.String(), tool: Type.String(), before: Verdict, after: Verdict, changed: Type.Boolean() })),
  nextAfter: NextAfter,
});

export const RollbackResult = Type.Object({
  runId: Type.String(),
  complete: Type.Boolean({ description: 'Every executed step was compensated.' }),
  steps: Type.Array(
    Type.Object({
      step: Type.Integer(),
      callId: Type.String(),
      tool: Type.String(),
      outcome: Type.Union(['compensated', 'failed', 'denied', 'needs_review', 'no_compensation', 'already_compensated'].map((o) => Type.Literal(o))),
      status: Nullable(Type.Integer()),
      reasons: Type.Array(Type.String()),
      error: Nullable(Type.Object({ code: Type.String(), detail: Type.String() })),
    }),
  ),
});

const Excerpt = Nullable(Type.Object({ status: Type.Integer(), headers: Type.Record(Type.String(), Type.String()), body: Type.String(), truncated: Type.Boolean(), latencyMs: Type.Number() }));

export const Step = Type.Object({
  id: Type.String(),
  index: Type.Integer(),
  tool: Type.String(),
  input: Type.Record(Type.String(), Type.Unknown()),
  spend: Type.Number(),
  policyInput: Type.Record(Type.String(), Type.Unknown()),
  policy: Type.Object({ name: Type.String(), moduleHash: Type.String(), inputDigest: Type.String(), allow: Type.Boolean(), gate: Type.String(), reasons: Type.Array(Type.String()) }),
  state: Type.Union(['denied', 'held', 'executing', 'executed', 'failed', 'withdrawn'].map((s) => Type.Literal(s))),
  decisionId: Nullable(Type.String()),
  request: Nullable(Type.Object({ method: Type.String(), url: Type.String(), body: Type.String() })),
  response: Excerpt,
  error: Nullable(Type.Object({ code: Type.String(), detail: Type.String() })),
  compensation: Nullable(Type.Record(Type.String(), Type.Unknown())),
});

export const Run = Type.Object({
  id: Type.String(),
  agentId: Type.String(),
  keyId: Type.String(),
  state: Type.Union([Type.Literal('open'), Type.Literal('stopped'), Type.Literal('rolled_back')]),
  stopReason: Nullable(Type.String()),
  limits: Type.Object({ maxToolCalls: Type.Integer(), maxSpend: Type.Number(), maxWallMs: Type.Integer() }),
  calls: Type.Integer({ description: 'Steps recorded, refused ones included.' }),
  spend: Type.Number({ description: 'The spend of the steps held, executing or executed.' }),
  byState: Type.Record(Type.String(), Type.Integer(), { description: 'Steps by state.' }),
  byTool: Type.Record(Type.String(), Type.Integer(), { description: 'Calls by tool.' }),
  startedAt: Type.String(),
  updatedAt: Type.String(),
  steps: Type.Array(Step, { description: 'One page of steps, oldest first.' }),
  nextAfter: NextAfter,
});

export const ToolCallResult = Type.Object({ runId: Type.String(), call: Step, result: Type.Unknown({ description: 'The tool’s JSON answer, or null.' }) });
