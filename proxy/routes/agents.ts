import { DEFAULT_LIMITS } from '../../core/agents/limits.ts';
import { replayRun } from '../../core/agents/replay.ts';
import { rollbackRun } from '../../core/agents/rollback.ts';
import type { ToolRecord } from '../../core/agents/tools.ts';
import { runTrace } from '../../core/agents/trace.ts';
import { decisionView } from '../../core/decision.ts';
import { GatehouseError, type ErrorCode } from '../../core/errors.ts';
import {
  Agent,
  OpenRunBody,
  RegisterAgentBody,
  RegisterToolBody,
  ReplayBody,
  ReplayResult,
  RollbackResult,
  Run,
  STEP_PAGE,
  StepPageQuery,
  Tool,
  ToolCallBody,
  ToolCallResult,
  ToolList,
} from '../agent-schemas.ts';
import { json } from '../http/reply.ts';
import { problemResponse, type RouteDef } from '../route.ts';
import { Decision } from '../schemas.ts';
import { requestFacts } from '../stages/policy.ts';
import { principal } from './principal.ts';

/**
 * Governed agents (docs/agents.md): registering tools and agents (scope `admin`: they decide
 * what automated callers may do), and running them (scope `agents:run`): runs, tool calls through
 * TOOL_CALL → POLICY_CHECK → HUMAN_APPROVAL → EXECUTE, traces, replay and rollback. The rules
 * live in core/agents/; these handlers translate.
 */
const COMMON = {
  400: problemResponse('Malformed JSON or a body that does not match the schema.'),
  401: problemResponse('Missing, unknown, revoked or unreviewed API key.'),
  403: problemResponse('Insufficient scope.'),
  429: problemResponse('Rate limited.'),
};

/** How a step that failed without the tool's answer is answered. */
const CALL_FAILURES: Record<string, ErrorCode> = { upstream_unavailable: 'upstream_unavailable', upstream_timeout: 'upstream_timeout', interrupted: 'not_ready' };

const RUN_NOT_FOUND = problemResponse('No such run opened by this key in this environment.');

function toolView(tool: ToolRecord) {
  const { env: _env, ...view } = tool;
  return view;
}

/** POST /v1/agents/tools — register a tool. */
const registerTool: RouteDef = {
  method: 'POST',
  path: '/v1/agents/tools',
  operationId: 'registerAgentTool',
  summary: 'Register a tool agents may call: its input schema, upstream, scopes, policy and optional compensating action.',
  scope: 'admin',
  audited: true,
  body: RegisterToolBody,
  responses: {
    201: { description: 'Registered.', schema: Tool },
    ...COMMON,
    400: problemResponse('A body that does not match the schema, an inputSchema that is not a valid JSON Schema of an object, or an endpoint URL the SSRF guard refuses (`errors` says why).'),
    409: problemResponse('A tool with this name exists.'),
    422: problemResponse('Unknown policy (`unknown_policy`).'),
  },
  async handle(ctx) {
    const caller = principal(ctx);
    const { tools } = ctx.services.agents;
    const tool = await tools.prepare(caller.env, caller.keyId, ctx.body as RegisterToolBody);
    ctx.writes.push(() => tools.write(tool));
    return json(201, toolView(tool));
  },
};

/** GET /v1/agents/tools — the environment's tools. */
const listTools: RouteDef = {
  method: 'GET',
  path: '/v1/agents/tools',
  operationId: 'listAgentTools',
  summary: 'List the tools registered in this environment.',
  scope: 'agents:run',
  audited: true,
  responses: { 200: { description: 'Every tool, by name.', schema: ToolList }, ...COMMON },
  handle(ctx) {
    return json(200, { data: ctx.services.agents.tools.list(principal(ctx).env).map(toolView) });
  },
};

/** POST /v1/agents — register an agent with its scopes and tools. */
const registerAgent: RouteDef = {
  method: 'POST',
  path: '/v1/agents',
  operationId: 'registerAgent',
  summary: 'Register an agent; every tool it lists must need only scopes it holds.',
  scope: 'admin',
  audited: true,
  body: RegisterAgentBody,
  responses: {
    201: { description: 'Registered.', schema: Agent },
    ...COMMON,
    400: problemResponse('A body that does not match the schema, or an unknown tool.'),
    403: problemResponse('Insufficient scope, or a listed tool needs a scope the agent does not hold (`forbidden`).'),
  },
  handle(ctx) {
    const caller = principal(ctx);
    const { agents } = ctx.services.agents;
    const agent = agents.prepare(caller.env, caller.keyId, ctx.body as RegisterAgentBody);
    ctx.writes.push(() => agents.write(agent));
    const { env: _env, ...view } = agent;
    return json(201, view);
  },
};

/**
 * POST /v1/agents/runs — open a run of an agent, with limits. The agent is named in the body:
 * a path `/v1/agents/{id}/runs` would be ambiguous with `/v1/agents/runs/{runId}`.
 */
const openRun: RouteDef = {
  method: 'POST',
  path: '/v1/agents/runs',
  operationId: 'openAgentRun',
  summary: 'Open a run of an agent; only the key that opens it may act in it.',
  scope: 'agents:run',
  audited: true,
  body: OpenRunBody,
  responses: { 201: { description: 'The open run.', schema: Run, headers: ['Location'] }, ...COMMON, 404: problemResponse('No such agent in this environment.') },
  handle(ctx) {
    const caller = principal(ctx);
    const { agents, runs } = ctx.services.agents;
    const body = ctx.body as OpenRunBody;
    const agent = agents.load(caller.env, body.agentId);
    const run = runs.open(caller, agent.id, { ...DEFAULT_LIMITS, ...body.limits });
    ctx.writes.push(() => runs.write(run));
    return json(201, runTrace(run, { steps: [], next: null }, ctx.services.workflow.decisions), { location: `/v1/agents/runs/${run.id}` });
  },
};

/** POST /v1/agents/runs/{runId}/tool-calls — one tool call, governed. */
const toolCall: RouteDef = {
  method: 'POST',
  path: '/v1/agents/runs/{runId}/tool-calls',
  operationId: 'callAgentTool',
  summary: 'Call a tool in a run: validated, judged by the tool’s policy, then executed, held for a human, or refused.',
  scope: 'agents:run',
  audited: true,
  body: ToolCallBody,
  idempotent: true,
  responses: {
    200: { description: 'Executed: the step and the tool’s JSON answer (`call.state` `failed` when it answered non-2xx).', schema: ToolCallResult },
    202: { description: 'Held for human approval: `Location` is the governing decision.', schema: Decision, headers: ['Location'] },
    ...COMMON,
    400: problemResponse('The input does not match the tool’s inputSchema; `errors[].pointer` names each failure.'),
    403: problemResponse('Insufficient scope, a tool the agent may not call (`forbidden`), or denied by the policy (`policy_denied`, with `reasons`).'),
    404: RUN_NOT_FOUND,
    409: problemResponse('The run is stopped (a limit: `reason` `limit:tool_calls`, `limit:spend`, `limit:wall_time`) or rolled back.'),
    502: problemResponse('The tool’s upstream could not be reached.'),
    503: problemResponse('The server shut down while the tool was being called (`not_ready`): the step is recorded `failed` (`interrupted`), and `detail` says whether the call may have reached the tool.'),
    504: problemResponse('The tool’s upstream did not answer in time.'),
  },
  async handle(ctx) {
    const caller = principal(ctx);
    const outcome = await ctx.services.agents.calls.call(caller, ctx.params.runId!, ctx.body as ToolCallBody, requestFacts(ctx), ctx.headers['traceparent']);
    ctx.policyCheck = outcome.check;
    const { step } = outcome;
    const ids = { runId: outcome.run.id, callId: step.id };
    switch (outcome.kind) {
      case 'denied':
        throw new GatehouseError('policy_denied', `${step.policy.name} denied calling ${step.tool}: ${step.policy.reasons.join('; ')}`, { ...ids, reasons: step.policy.reasons, policy: step.policy.name });
      case 'held': {
        ctx.decision = outcome.decision;
        const location = `/v1/decisions/${outcome.decision.id}`;
        return json(202, { ...decisionView(outcome.decision), ...ids }, { location });
      }
      case 'done':
        if (step.error && step.error.code !== 'upstream_status') throw new GatehouseError(CALL_FAILURES[step.error.code] ?? 'upstream_unavailable', step.error.detail, ids);
        return json(200, { runId: outcome.run.id, call: step, result: outcome.result ?? null });
    }
  },
};

/** GET /v1/agents/runs/{runId} — the run's trace. */
const getRun: RouteDef = {
  method: 'GET',
  path: '/v1/agents/runs/{runId}',
  operationId: 'getAgentRun',
  summary: 'The run’s trace, a page of steps at a time: each step with its input, policy input and verdict, approvals, upstream excerpts and timings.',
  scope: 'agents:run',
  audited: true,
  query: StepPageQuery,
  responses: { 200: { description: 'The run and one page of its steps; `nextAfter` is null on the last.', schema: Run }, ...COMMON, 404: RUN_NOT_FOUND },
  handle(ctx) {
    const { runs } = ctx.services.agents;
    const run = runs.load(principal(ctx), ctx.params.runId!);
    const { after, limit } = ctx.queryValues as StepPageQuery;
    return json(200, runTrace(run, runs.page(run, after ?? 0, limit ?? STEP_PAGE), ctx.services.workflow.decisions));
  },
};

/** POST /v1/agents/runs/{runId}/replay — re-evaluate every step against a policy version. */
const replay: RouteDef = {
  method: 'POST',
  path: '/v1/agents/runs/{runId}/replay',
  operationId: 'replayAgentRun',
  summary: 'Re-evaluate recorded steps, a page at a time, against the current or a named policy version, calling no tool; a diff of verdicts.',
  scope: 'agents:run',
  audited: true,
  body: ReplayBody,
  bodyOptional: true,
  responses: { 200: { description: 'Each step’s verdict before and after.', schema: ReplayResult }, ...COMMON, 404: RUN_NOT_FOUND, 422: problemResponse('Unknown policy (`unknown_policy`).') },
  handle(ctx) {
    const { agents, workflow, evaluator } = ctx.services;
    const run = agents.runs.load(principal(ctx), ctx.params.runId!);
    const { policy, after, limit } = ctx.body as ReplayBody;
    return json(200, replayRun(run, agents.runs.page(run, after ?? 0, limit ?? STEP_PAGE), workflow, evaluator, policy));
  },
};

/** POST /v1/agents/runs/{runId}/rollback — compensate every executed step, newest first. */
const rollback: RouteDef = {
  method: 'POST',
  path: '/v1/agents/runs/{runId}/rollback',
  operationId: 'rollbackAgentRun',
  summary: 'Run the compensating action of each executed step in reverse order, each policy-checked and audited; report every step’s outcome.',
  scope: 'agents:run',
  audited: true,
  responses: { 200: { description: 'Each executed step’s outcome; `complete` when all were compensated.', schema: RollbackResult }, ...COMMON, 404: RUN_NOT_FOUND },
  async handle(ctx) {
    return json(200, await rollbackRun(ctx.services.agents, principal(ctx), ctx.params.runId!, requestFacts(ctx)));
  },
};

export const agentRoutes: RouteDef[] = [registerTool, listTools, registerAgent, openRun, toolCall, getRun, replay, rollback];
