import { itemView } from '../../core/memory/item.ts';
import { committedJson, json } from '../http/reply.ts';
import { CreateObjectiveBody, LinkDecisionBody, MemoryItem, ObjectiveList, ObjectiveWithDecisions } from '../memory-schemas.ts';
import { problemResponse, type RouteDef } from '../route.ts';
import { principal } from './principal.ts';

/**
 * Objectives (core/memory/objectives.ts): what decisions serve. They live in memory, so they are
 * versioned and searchable; decisions name them when created or are linked to them here.
 */
const REFUSALS = {
  400: problemResponse('A body that does not match the schema.'),
  401: problemResponse('Missing, unknown, revoked or unreviewed API key.'),
  403: problemResponse('Insufficient scope.'),
  429: problemResponse('Rate limited.'),
};

/** POST /v1/objectives — create an objective (or its next version, for an existing key). */
const create: RouteDef = {
  method: 'POST',
  path: '/v1/objectives',
  operationId: 'createObjective',
  summary: 'Create an objective; its key defaults to the title as a slug, and an existing key gets a new version.',
  scope: 'memory:write',
  readsMemory: true,
  audited: true,
  body: CreateObjectiveBody,
  idempotent: true,
  responses: { 201: { description: 'The objective.', schema: MemoryItem }, ...REFUSALS },
  async handle(ctx) {
    const body = ctx.body as CreateObjectiveBody;
    const { memory, objectives } = ctx.services;
    const { env, keyId } = principal(ctx);
    objectives.check(env, body);
    const vector = await memory.embedForWrite(body.description ? `${body.title}\n${body.description}` : body.title);
    return committedJson(201, ctx.writes, () => itemView(objectives.write(env, keyId, body, vector)));
  },
};

/** GET /v1/objectives — every current objective. */
const list: RouteDef = {
  method: 'GET',
  path: '/v1/objectives',
  operationId: 'listObjectives',
  summary: 'List the current objectives, oldest first.',
  scope: 'memory:read',
  readsMemory: true,
  audited: true,
  responses: { 200: { description: 'The objectives.', schema: ObjectiveList }, ...REFUSALS },
  handle(ctx) {
    return json(200, { data: ctx.services.objectives.list(principal(ctx).env).map(itemView) });
  },
};

/** GET /v1/objectives/{id} — an objective and the decisions serving it. */
const get: RouteDef = {
  method: 'GET',
  path: '/v1/objectives/{id}',
  operationId: 'getObjective',
  summary: 'An objective with the decisions that serve it and their current status.',
  scope: 'memory:read',
  readsMemory: true,
  audited: true,
  responses: { 200: { description: 'The objective and its decisions.', schema: ObjectiveWithDecisions }, ...REFUSALS, 404: problemResponse('No such objective.') },
  handle(ctx) {
    const env = principal(ctx).env;
    const id = ctx.params.id!;
    return json(200, { objective: itemView(ctx.services.objectives.get(env, id)), decisions: ctx.services.objectives.decisions(env, id) });
  },
};

/** POST /v1/objectives/{id}/decisions — link an existing decision to the objective. */
const link: RouteDef = {
  method: 'POST',
  path: '/v1/objectives/{id}/decisions',
  operationId: 'linkObjectiveDecision',
  summary: "Link a decision to the objective (a new version of the decision's memory item with a `serves` edge); linking twice changes nothing.",
  scope: 'memory:write',
  readsMemory: true,
  audited: true,
  body: LinkDecisionBody,
  responses: { 200: { description: 'The objective and its decisions.', schema: ObjectiveWithDecisions }, ...REFUSALS, 404: problemResponse('No such objective or decision.') },
  handle(ctx) {
    const { env, keyId } = principal(ctx);
    const { objectives } = ctx.services;
    const id = ctx.params.id!;
    const { decisionId } = ctx.body as LinkDecisionBody;
    objectives.checkLink(env, id, decisionId);
    return committedJson(200, ctx.writes, () => {
      const item = objectives.link(env, keyId, id, decisionId);
      // Reads see committed memory only, so the version written here is added by hand.
      const decisions = objectives.decisions(env, id);
      if (item) decisions.push({ decisionId, title: String(item.attributes.title ?? ''), status: String(item.attributes.status ?? ''), version: item.version });
      return { objective: itemView(objectives.get(env, id)), decisions: decisions.sort((a, b) => (a.decisionId < b.decisionId ? -1 : 1)) };
    });
  },
};

export const objectiveRoutes: RouteDef[] = [create, list, get, link];
