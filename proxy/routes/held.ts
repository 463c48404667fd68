import { Type } from '@sinclair/typebox';
import { GatehouseError } from '../../core/errors.ts';
import { heldView } from '../../core/held-view.ts';
import { json } from '../http/reply.ts';
import { keyRefusals, problemResponse, type RouteDef } from '../route.ts';
import { Nullable } from '../schemas.ts';
import { principal } from './principal.ts';

/**
 * GET /v1/decisions/{id}/held — what a decision holds back (core/held-view.ts): the proxied
 * request or agent tool call that executing it will send, and who asked for it. The console's
 * decision page shows it beside the approve button.
 */
export const Held = Type.Object({
  decisionId: Type.String(),
  kind: Type.Union([Type.Literal('proxy-request'), Type.Literal('agent-tool-call')]),
  state: Type.String(),
  requestedBy: Nullable(Type.String()),
  requestedAt: Type.String({ format: 'date-time' }),
  via: Type.Union([Type.Object({ route: Type.String() }), Type.Object({ tool: Type.String(), agentId: Type.String(), runId: Type.String() })]),
  request: Type.Object({
    method: Type.String(),
    target: Type.String({ description: "The proxied path and query, or the tool's URL." }),
    upstream: Nullable(Type.String()),
    body: Type.String({ description: 'The body as UTF-8 text, cut at 4,096 bytes.' }),
    bodyBytes: Type.Integer(),
    truncated: Type.Boolean(),
  }),
});

const held: RouteDef = {
  method: 'GET',
  path: '/v1/decisions/{id}/held',
  operationId: 'getHeld',
  summary: 'The proxied request or agent tool call a decision holds: what executing it sends, and who asked.',
  scope: 'decisions:read',
  audited: true,
  responses: {
    200: { description: 'What the decision holds.', schema: Held },
    ...keyRefusals('decisions:read'),
    404: problemResponse('No such decision in this environment, or it holds no request or tool call.'),
  },
  handle(ctx) {
    const { workflow, heldRequests, agents } = ctx.services;
    const decision = workflow.load(principal(ctx).env, ctx.params.id!);
    ctx.decision = decision;
    const view = heldView(decision, { heldRequests, runs: agents.runs, tools: agents.tools });
    if (!view) throw new GatehouseError('not_found', `decision ${decision.id} holds no proxied request or agent tool call`);
    return json(200, view);
  },
};

export const heldRoutes: RouteDef[] = [held];
