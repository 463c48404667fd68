import type { RequestFacts } from '../policy-input.ts';
import type { Principal } from '../principal.ts';
import type { AgentRecord } from './agents.ts';
import { runSpend, type RunRecord } from './runs.ts';
import type { ToolRecord } from './tools.ts';

/**
 * The input document a tool's policy evaluates (the contract of policies/rego/agent-tools-v1.rego
 * and docs/agents.md). The run's history lists earlier steps without their inputs, so the
 * document stays small however long the run; `spend` is what the run has committed so far.
 */
export type ToolPolicyAction = 'tool_call' | 'rollback';

export function toolCallInput(
  action: ToolPolicyAction,
  agent: AgentRecord,
  tool: ToolRecord,
  input: Record<string, unknown>,
  run: RunRecord,
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
      state: run.state,
      history: run.steps.map((s) => ({ index: s.index, tool: s.tool, state: s.state, spend: s.spend, allow: s.policy.allow, gate: s.policy.gate })),
      spend: runSpend(run),
      calls: run.steps.length,
      limits: run.limits,
    },
    principal: { keyId: principal.keyId, env: principal.env, scopes: principal.scopes, roles: principal.roles },
    request,
    now_ns: Date.now() * 1e6,
  };
}

/**
 * What the policy sees of a held call when its decision is acted on: the call as it was judged,
 * the run's current state (a stopped run is never executed), and the key that made the call as
 * `requester` (`principal` is then whoever acts on the decision).
 */
export function heldCallFacts(policyInput: Record<string, unknown>, run: RunRecord): Record<string, unknown> {
  const { action: _action, principal, request: _request, now_ns: _now, ...facts } = policyInput;
  return { ...facts, run: { ...(facts.run as object), state: run.state, spend: runSpend(run), calls: run.steps.length }, requester: principal };
}
