import { GatehouseError } from '../../core/errors.ts';
import { idSuffix } from '../../core/ids.ts';
import { json } from '../http/reply.ts';
import { problemResponse, type RouteDef } from '../route.ts';
import { Trace, TraceQuery } from '../schemas.ts';
import { principal } from './principal.ts';

/**
 * GET /v1/impact/trace?ref= — a decision's audit entries in order, by its trace reference (the
 * `auditTrail` of a decision or of a refusal) or by the decision id. Only entries recorded in
 * the caller's environment are visible.
 */
const trace: RouteDef = {
  method: 'GET',
  path: '/v1/impact/trace',
  operationId: 'getTrace',
  summary: "Resolve a trace reference (or decision id) to the decision's audit entries, in order.",
  scope: 'impact:read',
  audited: true,
  query: TraceQuery,
  responses: {
    200: { description: 'The trace.', schema: Trace },
    400: problemResponse('Missing `ref`.'),
    404: problemResponse('No entries for this reference in this environment.'),
  },
  handle(ctx) {
    const { ref } = ctx.queryValues as TraceQuery;
    if (!/^(trace|dec)_[0-9a-z]+$/.test(ref)) throw new GatehouseError('invalid_request', 'ref must be a trace_… reference or a dec_… id');
    const traceRef = `trace_${idSuffix(ref)}`;
    const env = principal(ctx).env;
    const entries = ctx.services.audit.trace(env, traceRef);
    if (entries.length === 0) throw new GatehouseError('not_found', `no audit entries for ${ref}`);
    const decisionId = `dec_${idSuffix(ref)}`;
    const stored = ctx.services.workflow.decisions.get(env, decisionId);
    return json(200, { ref: traceRef, decisionId: stored ? decisionId : null, entries });
  },
};

export const impactRoutes: RouteDef[] = [trace];
