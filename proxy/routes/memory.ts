import { GatehouseError } from '../../core/errors.ts';
import { itemView, SYSTEM_NAMESPACES } from '../../core/memory/item.ts';
import { LIST_LIMITS, type MemoryHit } from '../../core/memory/memory.ts';
import { committedJson, json } from '../http/reply.ts';
import { GetMemoryQuery, ListMemoryQuery, MemoryAnswer, MemoryItem, MemoryPage, MemoryVersions, QueryMemoryBody, WriteMemoryBody } from '../memory-schemas.ts';
import type { RequestContext } from '../context.ts';
import { problemResponse, type RouteDef } from '../route.ts';
import { principal } from './principal.ts';

/**
 * Memory: versioned items and hybrid retrieval (core/memory/memory.ts; docs/memory.md). A write
 * is checked in the handler and numbered in the transaction that stores it with the audit entry,
 * whose stored version is the reply. Everything is confined to the caller's environment.
 */
const REFUSALS = {
  400: problemResponse('A body or query that does not match the schema, or that the memory refuses (see `detail`).'),
  401: problemResponse('Missing, unknown, revoked or unreviewed API key.'),
  403: problemResponse('Insufficient scope.'),
  429: problemResponse('Rate limited.'),
};

function refuseSystemNamespace(namespace: string): void {
  if (SYSTEM_NAMESPACES.has(namespace)) {
    throw new GatehouseError('invalid_request', `namespace '${namespace}' is written by Gatehouse itself (decisions and objectives have their own routes)`);
  }
}

/** The item the path's `{id}` names: its id (`mem_…`) or `namespace:key`, as links and traces name it. */
function itemId(ctx: RequestContext): string {
  const ref = ctx.params.id!;
  const id = ctx.services.memory.resolve(principal(ctx).env, ref);
  if (id === undefined) throw new GatehouseError('not_found', `no memory item ${ref}`);
  return id;
}

/** POST /v1/memory — write an item, or the next version of (namespace, key). */
const write: RouteDef = {
  method: 'POST',
  path: '/v1/memory',
  operationId: 'writeMemory',
  summary: 'Write a memory item; writing an existing namespace and key adds its next version (nothing is overwritten).',
  scope: 'memory:write',
  readsMemory: true,
  audited: true,
  body: WriteMemoryBody,
  idempotent: true,
  responses: {
    201: { description: 'The stored version.', schema: MemoryItem },
    ...REFUSALS,
    409: problemResponse('An identical Idempotency-Key is still in flight.'),
    413: problemResponse('Body too large.'),
    415: problemResponse('Body is not JSON.'),
    422: problemResponse('Idempotency-Key reused with another body.'),
  },
  async handle(ctx) {
    const body = ctx.body as WriteMemoryBody;
    refuseSystemNamespace(body.namespace);
    const { memory } = ctx.services;
    const { env, keyId } = principal(ctx);
    memory.check(env, body);
    const vector = await memory.embedForWrite(body.text);
    return committedJson(201, ctx.writes, () => itemView(memory.write(env, keyId, body, vector)));
  },
};

/** GET /v1/memory/{id} — the latest version, a named one, or the one current at `asOf`; `{id}` may be `namespace:key`. */
const get: RouteDef = {
  method: 'GET',
  path: '/v1/memory/{id}',
  operationId: 'getMemory',
  summary: 'Read a memory item, named by id or `namespace:key`: the latest version, `?version=N`, or the version current at `?asOf=`.',
  scope: 'memory:read',
  readsMemory: true,
  audited: true,
  query: GetMemoryQuery,
  responses: {
    200: { description: 'The version.', schema: MemoryItem },
    ...REFUSALS,
    404: problemResponse('No such item (or version) in this environment, or the item is deleted (`deletedVersion`).'),
  },
  handle(ctx) {
    const { version, asOf } = ctx.queryValues as GetMemoryQuery;
    if (version !== undefined && asOf !== undefined) throw new GatehouseError('invalid_request', 'ask for a version or an asOf, not both');
    return json(200, itemView(ctx.services.memory.get(principal(ctx).env, itemId(ctx), { version, asOf })));
  },
};

/** GET /v1/memory/{id}/versions — every version, tombstones included. */
const versions: RouteDef = {
  method: 'GET',
  path: '/v1/memory/{id}/versions',
  operationId: 'listMemoryVersions',
  summary: 'Every version of a memory item (by id or `namespace:key`), oldest first, tombstones included.',
  scope: 'memory:read',
  readsMemory: true,
  audited: true,
  responses: { 200: { description: 'The versions.', schema: MemoryVersions }, ...REFUSALS, 404: problemResponse('No such item in this environment.') },
  handle(ctx) {
    const id = itemId(ctx);
    return json(200, { id, versions: ctx.services.memory.versions(principal(ctx).env, id).map(itemView) });
  },
};

/** DELETE /v1/memory/{id} — a tombstone version; earlier versions stay readable. */
const remove: RouteDef = {
  method: 'DELETE',
  path: '/v1/memory/{id}',
  operationId: 'deleteMemory',
  summary: 'Delete a memory item (by id or `namespace:key`) by writing a tombstone version; earlier versions stay readable and `asOf` still sees them.',
  scope: 'memory:write',
  readsMemory: true,
  audited: true,
  idempotent: true,
  responses: {
    200: { description: 'The tombstone version.', schema: MemoryItem },
    ...REFUSALS,
    404: problemResponse('No such item in this environment.'),
    409: problemResponse('Already deleted, or an identical Idempotency-Key is in flight.'),
  },
  handle(ctx) {
    const caller = principal(ctx);
    const { memory } = ctx.services;
    const id = itemId(ctx);
    const current = memory.items.latest(caller.env, id);
    if (current) refuseSystemNamespace(current.namespace);
    memory.assertDeletable(caller.env, id);
    ctx.checks.push(() => memory.assertDeletable(caller.env, id));
    return committedJson(200, ctx.writes, () => itemView(memory.delete(caller.env, caller.keyId, id)));
  },
};

/** GET /v1/memory — live items, oldest first, filtered, a page at a time. */
const list: RouteDef = {
  method: 'GET',
  path: '/v1/memory',
  operationId: 'listMemory',
  summary: 'List live memory items (their current versions) in the order they were first written; filter by namespace, writer and attribute; page with `cursor`.',
  scope: 'memory:read',
  readsMemory: true,
  audited: true,
  query: ListMemoryQuery,
  responses: { 200: { description: 'One page; `nextCursor` is null on the last.', schema: MemoryPage }, ...REFUSALS },
  handle(ctx) {
    const { namespace, createdBy, attribute, asOf, limit, cursor } = ctx.queryValues as ListMemoryQuery;
    const separator = attribute?.indexOf(':') ?? -1;
    const attributes = attribute === undefined ? undefined : { [attribute.slice(0, separator)]: attribute.slice(separator + 1) };
    const page = ctx.services.memory.listPage(principal(ctx).env, { namespace, createdBy, attributes, asOf, cursor, limit: limit ?? LIST_LIMITS.defaultLimit });
    return json(200, { data: page.items.map(itemView), nextCursor: page.nextCursor, revision: page.revision });
  },
};

function hitView(hit: MemoryHit) {
  return { ...itemView(hit.item), score: hit.score, scores: hit.scores, signals: hit.raw, lineage: hit.lineage };
}

/** POST /v1/memory/query — hybrid retrieval with per-component scores and lineage. */
const query: RouteDef = {
  method: 'POST',
  path: '/v1/memory/query',
  operationId: 'queryMemory',
  summary: 'Find memory by meaning, words and links: results ranked by a hybrid of embedding similarity, BM25 and graph proximity, with each score broken down.',
  scope: 'memory:read',
  readsMemory: true,
  audited: true,
  body: QueryMemoryBody,
  responses: {
    200: { description: 'Results best first, with `revision` the memory state answered from.', schema: MemoryAnswer },
    ...REFUSALS,
    415: problemResponse('Body is not JSON.'),
    503: problemResponse('The embedding service is unavailable.'),
  },
  async handle(ctx) {
    const answer = await ctx.services.memory.query(principal(ctx).env, ctx.body as QueryMemoryBody);
    return json(200, { revision: answer.revision, results: answer.results.map(hitView) });
  },
};

export const memoryRoutes: RouteDef[] = [write, list, query, get, versions, remove];
