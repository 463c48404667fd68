import type { Act } from '../../core/decision-workflow.ts';
import { decisionView, firstRepeatedSource } from '../../core/decision.ts';
import { GatehouseError } from '../../core/errors.ts';
import { decisionEvent, policyDeniedEvent } from '../../core/events/decision-events.ts';
import type { RequestContext } from '../context.ts';
import { json } from '../http/reply.ts';
import { problemResponse, type RouteDef } from '../route.ts';
import {
  ActionBody,
  CONTEXT_TEXT_MAX_BYTES,
  CreateDecisionBody,
  Decision,
  DecisionCounts,
  DecisionCountsQuery,
  DecisionPage,
  ListDecisionsQuery,
} from '../schemas.ts';
import { requestFacts } from '../stages/policy.ts';
import { principal } from './principal.ts';

/**
 * Decisions: create, read, list, and the four workflow actions. Every write is judged by the
 * decision's own policy (core/decision-workflow.ts) in the policy stage, then applied in the
 * handler stage.
 */

const COMMON_REFUSALS = {
  400: problemResponse('Malformed JSON or a body that does not match the schema.'),
  401: problemResponse('Missing, unknown, revoked or unreviewed API key.'),
  403: problemResponse('Insufficient scope, or denied by the policy (`policy_denied`).'),
  429: problemResponse('Rate limited.'),
};

/**
 * What CreateDecisionBody cannot say: context text is bounded in bytes of UTF-8 (the schema counts
 * characters), and each context source is given once, so the policy judges every value stored.
 */
function checkContext(body: unknown): void {
  const { context } = body as CreateDecisionBody;
  if (typeof context === 'string' && Buffer.byteLength(context) > CONTEXT_TEXT_MAX_BYTES) {
    throw new GatehouseError('invalid_request', 'context text exceeds 64 KiB', {
      errors: [{ path: 'body/context', message: `Expected at most ${CONTEXT_TEXT_MAX_BYTES} bytes` }],
    });
  }
  const repeated = Array.isArray(context) ? firstRepeatedSource(context) : null;
  if (repeated) {
    const { source, first, index } = repeated;
    throw new GatehouseError('invalid_request', `context names ${source} twice (items ${first} and ${index}): give each source once`, {
      errors: [{ path: `body/context/${index}/source`, message: `Expected each source once; item ${first} names it too` }],
    });
  }
}

/** POST /v1/decisions — create a decision under a named policy. */
const create: RouteDef = {
  method: 'POST',
  path: '/v1/decisions',
  operationId: 'createDecision',
  summary: 'Create a governed decision; the named policy decides whether it may exist and what gates it.',
  scope: 'decisions:write',
  audited: true,
  body: CreateDecisionBody,
  checkBody: checkContext,
  idempotent: true,
  responses: {
    200: { description: 'Created. `gate` and `nextAction` say what the policy requires next.', schema: Decision },
    ...COMMON_REFUSALS,
    409: problemResponse('An identical Idempotency-Key is still in flight.'),
    413: problemResponse('Body too large.'),
    415: problemResponse('Body is not JSON.'),
    422: problemResponse('Unknown policy, or Idempotency-Key reused with another body.'),
  },
  policy(ctx) {
    const caller = principal(ctx);
    const draft = ctx.services.workflow.draft(caller.env, caller, ctx.body as CreateDecisionBody);
    ctx.draft = draft;
    const check = ctx.services.workflow.check('create', draft, caller, requestFacts(ctx));
    ctx.policyCheck = check;
    if (!check.verdict.allow) ctx.events.push(policyDeniedEvent('create', check, draft));
  },
  handle(ctx) {
    const { workflow } = ctx.services;
    const record = workflow.applyCreate(ctx.draft!, ctx.policyCheck!);
    ctx.decision = record;
    ctx.writes.push(() => workflow.write(record));
    const reply = json(200, decisionView(record));
    ctx.events.push(decisionEvent(record, reply.body));
    return reply;
  },
};

/** GET /v1/decisions/{id} — one decision in the caller's environment. */
const get: RouteDef = {
  method: 'GET',
  path: '/v1/decisions/{id}',
  operationId: 'getDecision',
  summary: 'Read one decision.',
  scope: 'decisions:read',
  audited: true,
  responses: { 200: { description: 'The decision.', schema: Decision }, ...COMMON_REFUSALS, 404: problemResponse('No such decision in this environment.') },
  handle(ctx) {
    const record = ctx.services.workflow.load(principal(ctx).env, ctx.params.id!);
    ctx.decision = record;
    return json(200, decisionView(record));
  },
};

/** GET /v1/decisions — decisions oldest (or newest) first, filtered, a page at a time. */
const list: RouteDef = {
  method: 'GET',
  path: '/v1/decisions',
  operationId: 'listDecisions',
  summary: 'List decisions oldest first (`order=desc`: newest first); filter by status, policy, gate, nextAction and title (`q`); page with `cursor`.',
  scope: 'decisions:read',
  audited: true,
  query: ListDecisionsQuery,
  responses: { 200: { description: 'One page; `nextCursor` is null on the last.', schema: DecisionPage }, ...COMMON_REFUSALS },
  handle(ctx) {
    const q = ctx.queryValues as ListDecisionsQuery;
    const page = ctx.services.workflow.decisions.list(principal(ctx).env, { ...q, limit: q.limit ?? 50 });
    return json(200, { data: page.data.map(decisionView), nextCursor: page.nextCursor });
  },
};

/**
 * GET /v1/decisions/counts — how many decisions a selection lists, and how many each status,
 * gate, next action and policy would list with the other filters kept (the console's counts).
 */
const counts: RouteDef = {
  method: 'GET',
  path: '/v1/decisions/counts',
  operationId: 'countDecisions',
  summary: 'Count the decisions a selection (the list filters) lists, broken down by status, gate, nextAction and policy.',
  scope: 'decisions:read',
  audited: true,
  query: DecisionCountsQuery,
  responses: { 200: { description: 'The counts.', schema: DecisionCounts }, ...COMMON_REFUSALS },
  async handle(ctx) {
    return json(200, await ctx.services.workflow.decisions.counts(principal(ctx).env, ctx.queryValues as DecisionCountsQuery));
  },
};

const ACTION_SUMMARY: Record<Act, string> = {
  approve: 'Approve a decision held at a gate; it becomes `approved` once it has the approvals its policy asked for.',
  reject: 'Reject a decision awaiting approval.',
  execute: 'Execute an approved decision (or one its policy let through); refused by the policy, it becomes `blocked`.',
  cancel: 'Cancel a decision that has not been executed, rejected or cancelled.',
};

const ACTION_SCOPE = { approve: 'decisions:approve', reject: 'decisions:approve', execute: 'decisions:execute', cancel: 'decisions:write' } as const;

/** POST /v1/decisions/{id}/{approve|reject|execute|cancel} — one workflow step, policy-checked. */
function action(act: Act): RouteDef {
  return {
    method: 'POST',
    path: `/v1/decisions/{id}/${act}`,
    operationId: `${act}Decision`,
    summary: ACTION_SUMMARY[act],
    scope: ACTION_SCOPE[act],
    audited: true,
    body: ActionBody,
    bodyOptional: true,
    idempotent: true,
    responses: {
      200: { description: 'The decision after the step.', schema: Decision },
      ...COMMON_REFUSALS,
      404: problemResponse('No such decision in this environment.'),
      409: problemResponse('The decision is not in a status this step can follow (`invalid_transition`), or a retry is in flight.'),
      422: problemResponse('Idempotency-Key reused with another body.'),
    },
    policy(ctx: RequestContext) {
      const caller = principal(ctx);
      const decision = ctx.services.workflow.load(caller.env, ctx.params.id!);
      ctx.decision = decision;
      const check = ctx.services.workflow.check(act, decision, caller, requestFacts(ctx));
      ctx.policyCheck = check;
      if (!check.verdict.allow) ctx.events.push(policyDeniedEvent(act, check, decision));
    },
    handle(ctx: RequestContext) {
      const { workflow } = ctx.services;
      const comment = (ctx.body as ActionBody).comment ?? null;
      const { record, refusal } = workflow.applyAction(act, ctx.decision!, principal(ctx), ctx.policyCheck!, comment);
      ctx.decision = record;
      ctx.checks.push(() => workflow.assertCurrent(record));
      ctx.writes.push(() => workflow.write(record));
      if (refusal) {
        ctx.events.push(decisionEvent(record));
        throw refusal;
      }
      const reply = json(200, decisionView(record));
      ctx.events.push(decisionEvent(record, reply.body));
      return reply;
    },
  };
}

export const decisionRoutes: RouteDef[] = [create, list, counts, get, action('approve'), action('reject'), action('execute'), action('cancel')];
