import { Type } from '@sinclair/typebox';
import { GatehouseError } from '../../core/errors.ts';
import type { TraceTarget } from '../../core/impact/impact-trace.ts';
import { PAGE_LIMITS } from '../../core/impact/pagination.ts';
import { json } from '../http/reply.ts';
import { InfluenceTrace, TraceQuery } from '../impact-schemas.ts';
import { problemResponse, type RouteDef } from '../route.ts';
import { Trace } from '../schemas.ts';
import { principal } from './principal.ts';

const TARGETS = ['decision', 'ref', 'input', 'objective'] as const;

/** The one target the query names; none or several is the caller's mistake. */
function target(query: TraceQuery): TraceTarget {
  const given = TARGETS.filter((name) => query[name] !== undefined);
  if (given.length !== 1) {
    const found = given.length === 0 ? 'none was given' : `got ${given.join(' and ')}`;
    throw new GatehouseError('invalid_request', `give exactly one of decision, ref, input or objective: ${found}`);
  }
  const name = given[0]!;
  return { [name]: query[name]! } as TraceTarget;
}

/**
 * GET /v1/impact/trace?decision=|ref=|input=|objective= — what a decision went through, or what
 * an input or objective influenced (core/impact/impact-trace.ts). `decision` and `ref` answer the
 * decision's ordered trace (requests and their policy evaluations from the audit log, workflow
 * steps, events, webhook deliveries); `input` and `objective` the decisions linked to it in memory
 * with their outcomes. Paginated by `limit` and `cursor`; only the caller's environment is seen.
 */
const trace: RouteDef = {
  method: 'GET',
  path: '/v1/impact/trace',
  operationId: 'getTrace',
  summary: 'The ordered trace of a decision (by id or trace reference), or the decisions an input or objective influenced and their outcomes; paginated.',
  scope: 'impact:read',
  readsMemory: true,
  audited: true,
  query: TraceQuery,
  responses: {
    200: { description: '`kind: decision` for `decision` and `ref`; `kind: input` or `objective` otherwise.', schema: Type.Union([Trace, InfluenceTrace]) },
    400: problemResponse('Not exactly one of `decision`, `ref`, `input`, `objective`; a malformed value or cursor.'),
    401: problemResponse('Missing, unknown, revoked or unreviewed API key.'),
    403: problemResponse('Insufficient scope.'),
    404: problemResponse('No such decision, trace, input or objective in this environment.'),
  },
  async handle(ctx) {
    const query = ctx.queryValues as TraceQuery;
    const page = { limit: query.limit ?? PAGE_LIMITS.defaultLimit, ...(query.cursor === undefined ? {} : { cursor: query.cursor }) };
    return json(200, await ctx.services.impact.trace(principal(ctx).env, target(query), page));
  },
};

export const impactRoutes: RouteDef[] = [trace];
