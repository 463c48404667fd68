import { Type, type TSchema } from '@sinclair/typebox';
import { BUDGET_LIMITS } from '../core/context/budget.ts';
import { LAYERS, ROLES } from '../core/context/roles.ts';

/**
 * Schemas of POST /v1/context/synthesis (proxy/routes/context.ts; core/context/). The subject's
 * "exactly one of" and the budget's range are checked in core/context/synthesis.ts, which says
 * what was wrong in plain words; the schema fixes the shape.
 */
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const literals = (values: readonly string[]) => Type.Union(values.map((value) => Type.Literal(value)));

export const SynthesisBody = Type.Object(
  {
    subject: Type.Object(
      {
        decisionId: Type.Optional(Type.String({ maxLength: 128, description: 'A decision id (`dec_…`): the decision and the evidence its edges name.' })),
        query: Type.Optional(Type.String({ description: 'A question: the hybrid memory query’s results (same limits as POST /v1/memory/query).' })),
      },
      { additionalProperties: false, description: 'Exactly one of `decisionId` or `query`.' },
    ),
    role: literals(ROLES),
    layers: Type.Optional(Type.Array(literals(LAYERS), { minItems: 1, maxItems: 3, uniqueItems: true, description: 'Default: all three.' })),
    budget: Type.Optional(
      Type.Integer({ description: `Approximate tokens (characters / 4) of content, ${BUDGET_LIMITS.min}–${BUDGET_LIMITS.max}, default ${BUDGET_LIMITS.default}.` }),
    ),
    asOf: Type.Optional(
      Type.Union([Type.String({ maxLength: 64 }), Type.Integer({ minimum: 0 })], { description: 'An ISO 8601 time or a memory revision: synthesise from memory as it stood then.' }),
    ),
  },
  { additionalProperties: false },
);

// Responses (documentation only).

const Citation = Type.Object({ id: Type.String(), version: Type.Integer() });
const Lineage = Type.Array(Citation, { description: 'The memory item versions the statement was taken from.' });
const Scalar = Type.Union([Type.String(), Type.Number(), Type.Boolean()]);
const Statement = Type.Object({ text: Type.String(), truncated: Type.Boolean(), lineage: Lineage });
const SourceRef = Type.Object({
  id: Type.String(),
  version: Type.Integer(),
  namespace: Type.String(),
  key: Type.String(),
  kind: literals(['decision', 'objective', 'policy', 'approver', 'evidence']),
  relation: Type.String({ description: '`subject`, the decision’s edge to it, `match`, or the edge a query result was reached by.' }),
  score: Nullable(Type.Number()),
});
const Report = {
  allotted: Type.Integer({ description: 'The layer’s share of the budget plus `carried`.' }),
  carried: Type.Integer({ description: 'Tokens the layers before it left unused.' }),
  used: Type.Integer(),
  omitted: Type.Integer({ description: 'Pieces left out for want of budget.' }),
  truncated: Type.Boolean(),
};

export const Synthesis = Type.Object({
  subject: Type.Object({ decisionId: Type.Optional(Type.String()), query: Type.Optional(Type.String()) }),
  role: literals(ROLES),
  revision: Type.Integer({ description: 'The memory revision every statement was read at.' }),
  budget: Type.Object({ unit: Type.Literal('tokens'), total: Type.Integer(), used: Type.Integer() }),
  sources: Type.Array(SourceRef, { description: 'Every source read, in the role’s order.' }),
  layers: Type.Object({
    executive: Type.Optional(
      Type.Object({
        ...Report,
        summary: Type.Array(Statement),
        figures: Type.Array(Type.Object({ label: Type.String(), attribute: Type.String(), value: Scalar, lineage: Lineage })),
      }),
    ),
    detailed: Type.Optional(
      Type.Object({
        ...Report,
        groups: Type.Array(
          Type.Object({
            source: SourceRef,
            facts: Type.Array(Statement),
            values: Type.Array(Type.Object({ attribute: Type.String(), value: Type.Union([Scalar, Type.Array(Scalar)]), lineage: Lineage })),
          }),
        ),
      }),
    ),
    raw: Type.Optional(
      Type.Object({
        ...Report,
        signals: Type.Array(
          Type.Object({
            id: Type.String(),
            namespace: Type.String(),
            key: Type.String(),
            version: Type.Integer(),
            revision: Type.Integer(),
            text: Type.String(),
            truncated: Type.Boolean(),
            attributes: Type.Record(Type.String(), Type.Unknown()),
            links: Type.Array(Type.Object({ to: Type.String(), relation: Type.String(), version: Type.Integer() })),
            createdAt: Type.String({ format: 'date-time' }),
            createdBy: Type.String(),
            lineage: Lineage,
          }),
        ),
      }),
    ),
  }),
});
