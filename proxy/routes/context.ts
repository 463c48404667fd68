import { ContextSynthesis, type SynthesisRequest } from '../../core/context/synthesis.ts';
import { json } from '../http/reply.ts';
import { Synthesis, SynthesisBody } from '../context-schemas.ts';
import { problemResponse, type RouteDef } from '../route.ts';
import { principal } from './principal.ts';

/**
 * Every answer of a beta endpoint says so in this header (docs/context.md): the value names the
 * feature, so a client can log or alert on beta use without parsing bodies. Beta means the shape
 * may still change between minor versions.
 */
export const BETA_HEADER = 'gatehouse-beta';
const BETA_FEATURE = 'context-synthesis';

/**
 * POST /v1/context/synthesis (beta) — role-layered context about a decision or a question, every
 * statement with the memory item versions it was taken from (core/context/synthesis.ts).
 */
const synthesis: RouteDef = {
  method: 'POST',
  path: '/v1/context/synthesis',
  operationId: 'synthesizeContext',
  summary: 'Beta (answers carry `Gatehouse-Beta: context-synthesis`): Executive, Detailed and Raw context layers about a decision or a query, for a role, within a budget; every statement cites its memory item versions.',
  scope: 'context:read',
  readsMemory: true,
  audited: true,
  body: SynthesisBody,
  responses: {
    200: { description: 'The layers asked for; `revision` is the memory state they were read at.', schema: Synthesis },
    400: problemResponse('A body that does not match the schema, a subject without exactly one of decisionId or query, a budget out of range, a bad query or asOf.'),
    401: problemResponse('Missing, unknown, revoked or unreviewed API key.'),
    403: problemResponse('Insufficient scope.'),
    404: problemResponse('No such decision in memory (at `asOf`).'),
    415: problemResponse('Body is not JSON.'),
    429: problemResponse('Rate limited.'),
    503: problemResponse('The embedding service is unavailable (query subjects).'),
  },
  async handle(ctx) {
    // Stateless over memory: nothing is worth keeping between requests.
    const answer = await new ContextSynthesis(ctx.services.memory).synthesize(principal(ctx).env, ctx.body as SynthesisRequest);
    return json(200, answer, { [BETA_HEADER]: BETA_FEATURE });
  },
};

export const contextRoutes: RouteDef[] = [synthesis];
