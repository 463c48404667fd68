import type { RequestFacts } from '../policy-input.ts';
import type { Principal } from '../principal.ts';
import type { AgentRecord } from './agents.ts';
import type { StepSummary, RunRecord } from './runs.ts';
import type { ToolRecord } from './tools.ts';

/**
 * The input document a tool's policy evaluates (the contract of policies/rego/agent-tools-v1.rego
 * and docs/agents.md). The run's history lists only its last HISTORY_STEPS steps, without their
 * inputs, and the rest of the run is summed up in its counters (`calls`, `spend`, `byState`,
 * `byTool`): the document, the step that stores it and the evaluation stay the same size
 * however long the run.
 */
export type ToolPolicyAction = 'tool_call' | 'rollback';

/** Steps a policy sees in `run.history` (docs/agents.md, docs/policy-contract.md). */
export const HISTORY_STEPS = 20;

export function toolCallInput(
  action: ToolPolicyAction,
  agent: AgentRecord,
  tool: ToolRecord,
  input: Record<string, unknown>,
  run: RunRecord,
  history: readonly StepSummary[],
  principal: Principal,
  request: RequestFacts,
): Record<string, unknown> {
  return {
    action,
    agent: { id: agent.id, name: agent.name, scopes: agent.scopes, tools: agent.tools },
    tool: { name: tool.name, scopes: tool.scopes, spendField: tool.spendField, compensate: tool.compensate !== null },
    input,
    run: {
      id: run.id,
      history,
      limits: run.limits,
      ...runFacts(run),
    },
    principal: { keyId: principal.keyId, env: principal.env, scopes: principal.scopes, roles: principal.roles },
    request,
    now_ns: Date.now() * 1e6,
  };
}

/**
 * What the policy sees of a held call when its decision is acted on: the call as it was judged,
 * the run's current state and counters (a stopped run is never executed), and the key that made
 * the call as `requester` (`principal` is then whoever acts on the decision).
 */
export function heldCallFacts(policyInput: Record<string, unknown>, run: RunRecord): Record<string, unknown> {
  const { action: _action, principal, request: _request, now_ns: _now, ...facts } = policyInput;
  return { ...facts, run: { ...(facts.run as object), ...runFacts(run) }, requester: principal };
}

/** The run's state and counters as they are now. */
function runFacts(run: RunRecord) {
  return { state: run.state, spend: run.spend, calls: run.calls, byState: run.byState, byTool: run.byTool };
}
