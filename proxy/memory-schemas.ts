import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Id } from './id-schema.ts';
import { KEY_PATTERN, NAMESPACE_PATTERN, RELATION_PATTERN } from '../core/memory/item.ts';
import { LIST_LIMITS, QUERY_LIMITS } from '../core/memory/memory.ts';

/**
 * Schemas of the memory and objectives routes (proxy/routes/memory.ts, proxy/routes/objectives.ts).
 * Limits a person is likely to hit (an empty or long query, topK, graph depth, an unknown
 * namespace, a malformed asOf) are checked in core/memory/memory.ts so the problem document can
 * say exactly what was wrong; the schemas here fix the shape.
 */
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const MEMORY_TEXT_MAX = 32 * 1024;

export const Namespace = Type.String({ pattern: NAMESPACE_PATTERN.source, description: 'Lower-case letters, digits, `_`, `.`, `-`; up to 64.' });
export const ItemKey = Type.String({ pattern: KEY_PATTERN.source, description: 'Letters, digits, `_`, `.`, `/`, `-`; up to 191.' });
export const Relation = Type.String({ pattern: RELATION_PATTERN.source, description: '`uses`, `serves`, `governed_by`, `approved_by`, `supersedes`, or your own.' });
const Scalar = Type.Union([Type.String({ maxLength: 1024 }), Type.Number(), Type.Boolean()]);

export const WriteMemoryBody = Type.Object(
  {
    namespace: Namespace,
    key: Type.Optional(ItemKey),
    text: Type.String({ minLength: 1, maxLength: MEMORY_TEXT_MAX, description: 'The evidence, up to 32 KiB.' }),
    attributes: Type.Optional(Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), { maxProperties: 64 })),
    links: Type.Optional(
      Type.Array(
        Type.Object(
          { to: Type.String({ minLength: 1, maxLength: 256, description: 'An item id (`mem_…`) or `namespace:key`.' }), relation: Relation },
          { additionalProperties: false },
        ),
        { maxItems: 100 },
      ),
    ),
  },
  { additionalProperties: false },
);
export type WriteMemoryBody = Static<typeof WriteMemoryBody>;

export const GetMemoryQuery = Type.Object(
  {
    version: Type.Optional(Type.Integer({ minimum: 1, description: 'A version of the item (old versions and tombstones stay readable).' })),
    asOf: Type.Optional(Type.String({ maxLength: 64, description: 'An ISO 8601 time or a revision number: the version current then.' })),
  },
  { additionalProperties: false },
);
export type GetMemoryQuery = Static<typeof GetMemoryQuery>;

export const ListMemoryQuery = Type.Object(
  {
    namespace: Type.Optional(Namespace),
    createdBy: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'Written (this version) by this key id.' })),
    attribute: Type.Optional(
      Type.String({ pattern: '^[^:]{1,64}:', maxLength: 1089, description: '`name:value`: items whose scalar attribute `name` is `value`, compared as text.' }),
    ),
    asOf: Type.Optional(Type.String({ maxLength: 64, description: 'An ISO 8601 time or a revision number: the items live then.' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: LIST_LIMITS.maxLimit, description: `Items per page, default ${LIST_LIMITS.defaultLimit}.` })),
    cursor: Type.Optional(Type.String({ maxLength: 512, description: 'The `nextCursor` of the previous page.' })),
  },
  { additionalProperties: false },
);
export type ListMemoryQuery = Static<typeof ListMemoryQuery>;

export const QueryMemoryBody = Type.Object(
  {
    query: Type.String({ description: `What to look for, 1–${QUERY_LIMITS.maxQueryLength} characters.` }),
    namespaces: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 32, description: 'Only these namespaces; each must exist.' })),
    topK: Type.Optional(Type.Integer({ description: `1–${QUERY_LIMITS.maxTopK}, default ${QUERY_LIMITS.defaultTopK}.` })),
    filters: Type.Optional(
      Type.Object(
        {
          attributes: Type.Optional(Type.Record(Type.String({ maxLength: 64 }), Scalar, { maxProperties: 16, description: 'Attribute equality.' })),
          createdBy: Type.Optional(Type.String({ maxLength: 128, description: 'Written by this key id.' })),
        },
        { additionalProperties: false },
      ),
    ),
    asOf: Type.Optional(
      Type.Union([Type.String({ maxLength: 64 }), Type.Integer({ minimum: 0 })], { description: 'An ISO 8601 time or a revision number: answer as memory stood then.' }),
    ),
    graph: Type.Optional(
      Type.Object(
        {
          expand: Type.Integer({ description: `Hops followed from the best matches, 0–${QUERY_LIMITS.maxExpand} (default ${QUERY_LIMITS.defaultExpand}; 0 turns the graph off).` }),
          relations: Type.Optional(Type.Array(Relation, { maxItems: 16, description: 'Follow only these relations.' })),
        },
        { additionalProperties: false },
      ),
    ),
    weights: Type.Optional(
      Type.Object(
        { semantic: Type.Number({ minimum: 0, maximum: 1 }), lexical: Type.Number({ minimum: 0, maximum: 1 }), graph: Type.Number({ minimum: 0, maximum: 1 }) },
        { additionalProperties: false, description: 'Overrides the tuned weights (docs/memory.md).' },
      ),
    ),
  },
  { additionalProperties: false },
);
export type QueryMemoryBody = Static<typeof QueryMemoryBody>;

const Link = Type.Object({ to: Type.String(), relation: Type.String(), version: Type.Integer() });

export const MemoryItem = Type.Object({
  id: Type.String(),
  namespace: Type.String(),
  key: Type.String(),
  version: Type.Integer(),
  revision: Type.Integer({ description: 'Position in the environment’s write order; usable as `asOf`.' }),
  text: Type.String(),
  attributes: Type.Record(Type.String(), Type.Unknown()),
  links: Type.Array(Link),
  tombstone: Type.Boolean(),
  createdAt: Type.String({ format: 'date-time' }),
  createdBy: Type.String(),
});

export const MemoryPage = Type.Object({
  data: Type.Array(MemoryItem),
  nextCursor: Nullable(Type.String({ description: 'Pass as `cursor` for the next page; null on the last.' })),
  revision: Type.Integer({ description: 'The memory state listed; pass as `asOf` to page through exactly that state.' }),
});

export const MemoryVersions = Type.Object({ id: Type.String(), versions: Type.Array(MemoryItem) });

const Components = Type.Object({ semantic: Type.Number(), lexical: Type.Number(), graph: Type.Number() });

export const MemoryHit = Type.Intersect([
  MemoryItem,
  Type.Object({
    score: Type.Number(),
    scores: Components,
    signals: Type.Object({ cosine: Nullable(Type.Number()), bm25: Nullable(Type.Number()) }, { description: 'The raw similarity and BM25 before normalisation.' }),
    lineage: Type.Object({
      versions: Type.Array(Type.Object({ version: Type.Integer(), revision: Type.Integer(), createdAt: Type.String(), tombstone: Type.Boolean() })),
      links: Type.Array(Link),
      via: Nullable(Type.Object({ from: Type.String(), relation: Type.String(), direction: Type.String(), hops: Type.Integer() })),
    }),
  }),
]);

export const MemoryAnswer = Type.Object({ revision: Type.Integer(), results: Type.Array(MemoryHit) });

export const CreateObjectiveBody = Type.Object(
  {
    title: Type.String({ minLength: 1, maxLength: 256 }),
    description: Type.Optional(Type.String({ maxLength: 4096 })),
    key: Type.Optional(ItemKey),
  },
  { additionalProperties: false },
);
export type CreateObjectiveBody = Static<typeof CreateObjectiveBody>;

export const LinkDecisionBody = Type.Object({ decisionId: Id({ pattern: '^dec_[0-9a-z]+$' }) }, { additionalProperties: false });
export type LinkDecisionBody = Static<typeof LinkDecisionBody>;

export const ObjectiveList = Type.Object({ data: Type.Array(MemoryItem) });

export const ObjectiveWithDecisions = Type.Object({
  objective: MemoryItem,
  decisions: Type.Array(Type.Object({ decisionId: Type.String(), title: Type.String(), status: Type.String(), version: Type.Integer() })),
});
