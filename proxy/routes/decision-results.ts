import { Type } from '@sinclair/typebox';
import { GatehouseError } from '../../core/errors.ts';
import type { HeldRequest } from '../../core/held-requests.ts';
import { json } from '../http/reply.ts';
import { problemResponse, type RouteDef } from '../route.ts';
import { Nullable } from '../schemas.ts';
import { principal } from './principal.ts';

/**
 * GET /v1/decisions/{id}/result — what became of the proxied request a decision held
 * (docs/proxy.md). `state` is `held` until the decision is executed, `pending` while the request
 * is on its way to the upstream, then `complete` with the upstream's response (status, headers,
 * and the body base64-encoded, cut at the server's body limit with `truncated: true`) or
 * `failed` with why; `withdrawn` when the decision was rejected or cancelled.
 */
export const DecisionResult = Type.Object({
  decisionId: Type.String(),
  state: Type.Union(['held', 'pending', 'complete', 'failed', 'withdrawn'].map((s) => Type.Literal(s))),
  request: Type.Object({ route: Type.String(), method: Type.String(), target: Type.String(), upstream: Type.String() }),
  response: Nullable(
    Type.Object({
      status: Type.Integer(),
      headers: Type.Record(Type.String(), Type.String()),
      body: Type.String({ contentEncoding: 'base64' }),
      truncated: Type.Boolean(),
      latencyMs: Type.Number(),
      at: Type.String({ format: 'date-time' }),
    }),
  ),
  error: Nullable(Type.Object({ code: Type.String(), detail: Type.String(), at: Type.String({ format: 'date-time' }) })),
});

function resultView(held: HeldRequest) {
  const outcome = held.outcome;
  return {
    decisionId: held.decisionId,
    state: held.state,
    request: { route: held.facts.route.name, method: held.facts.method, target: held.forward.target, upstream: held.facts.route.upstream },
    response:
      outcome?.kind === 'response'
        ? {
            status: outcome.response.status,
            headers: outcome.response.headers,
            body: Buffer.from(outcome.response.body).toString('base64'),
            truncated: outcome.response.truncated,
            latencyMs: outcome.response.latencyMs,
            at: outcome.at,
          }
        : null,
    error: outcome?.kind === 'failure' ? { code: outcome.code, detail: outcome.detail, at: outcome.at } : null,
  };
}

const result: RouteDef = {
  method: 'GET',
  path: '/v1/decisions/{id}/result',
  operationId: 'getDecisionResult',
  summary: 'The upstream response to the proxied request a decision held, once the decision is executed.',
  scope: 'decisions:read',
  audited: true,
  responses: {
    200: { description: 'The held request and, once sent, its response or failure.', schema: DecisionResult },
    401: problemResponse('Missing, unknown, revoked or unreviewed API key.'),
    403: problemResponse('Insufficient scope.'),
    404: problemResponse('No such decision in this environment, or it holds no proxied request.'),
    429: problemResponse('Rate limited.'),
  },
  handle(ctx) {
    const { workflow, heldRequests } = ctx.services;
    const decision = workflow.load(principal(ctx).env, ctx.params.id!);
    ctx.decision = decision;
    const held = heldRequests.forDecision(decision);
    if (!held) throw new GatehouseError('not_found', `decision ${decision.id} does not hold a proxied request`);
    return json(200, resultView(held));
  },
};

export const decisionResultRoutes: RouteDef[] = [result];
