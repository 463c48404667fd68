import { operationDraft, verdictSummary, type AuditLog } from '../audit-log.ts';
import type { DecisionWorkflow } from '../decision-workflow.ts';
import { toolCallEvent } from '../events/agent-events.ts';
import type { EventLog } from '../events/event-log.ts';
import type { RequestFacts } from '../policy-input.ts';
import type { Principal } from '../principal.ts';
import type { Store } from '../store.ts';
import type { AgentRegistry } from './agents.ts';
import type { Compensation, RunStore, Step } from './runs.ts';
import { HISTORY_STEPS, toolCallInput } from './tool-call-input.ts';
import { stepPolicy, type ToolCalls } from './tool-calls.ts';
import { stepTrace, type ToolSender } from './tool-sender.ts';
import type { ToolRegistry } from './tools.ts';

/**
 * Rollback: the compensating action of every executed step, newest first. Each one is judged by
 * the tool's policy (action `rollback`), sent with `{callId, tool, input, result}` (the step's
 * input and the tool's JSON answer), recorded on the step, audited and emitted. A compensation
 * that fails or is refused does not stop the others: a partial rollback that stopped silently
 * would be worse than one that reports each outcome, so every step gets one:
 *
 *   compensated | failed | denied | needs_review   its compensating action ran, or did not
 *   no_compensation                               the tool has no compensating action
 *   already_compensated                           an earlier rollback undid it
 *
 * The run becomes `rolled_back` before the first compensation: it takes no more calls, its held
 * calls can no longer be executed (the policy sees the run's state), and calls already executing
 * are waited for and undone too.
 */
export type RollbackOutcome = Compensation['outcome'] | 'no_compensation' | 'already_compensated';

export interface RolledBackStep {
  step: number;
  callId: string;
  tool: string;
  outcome: RollbackOutcome;
  status: number | null;
  reasons: string[];
  error: { code: string; detail: string } | null;
}

export interface RollbackDeps {
  store: Store;
  workflow: DecisionWorkflow;
  audit: AuditLog;
  events: EventLog;
  tools: ToolRegistry;
  agents: AgentRegistry;
  runs: RunStore;
  sender: ToolSender;
  calls: ToolCalls;
}

export function rollbackRun(deps: RollbackDeps, principal: Principal, runId: string, request: RequestFacts): Promise<{ runId: string; complete: boolean; steps: RolledBackStep[] }> {
  return deps.calls.exclusive(runId, async () => {
    const { env, id, agentId } = deps.runs.load(principal, runId);
    // Closed first, so no call is admitted behind the rollback's back; calls admitted before
    // finish executing, and are then undone with the rest.
    await deps.store.commit(() => deps.runs.update(env, id, (r) => Object.assign({}, r, { state: 'rolled_back', stopReason: r.stopReason ?? 'rollback' })));
    await deps.calls.settled(id);
    const agent = deps.agents.load(env, agentId);
    const steps: RolledBackStep[] = [];
    for (const step of deps.runs.newestFirst(deps.runs.get(env, id)!)) {
      if (step.state === 'executed') steps.push(await compensate(deps, principal, id, step, agent, request));
    }
    const complete = steps.every((s) => s.outcome === 'compensated' || s.outcome === 'already_compensated');
    return { runId: id, complete, steps };
  });
}

async function compensate(deps: RollbackDeps, principal: Principal, runId: string, step: Step, agent: Parameters<typeof toolCallInput>[1], request: RequestFacts): Promise<RolledBackStep> {
  const report = (outcome: RollbackOutcome, compensation: Compensation | null): RolledBackStep => ({
    step: step.index,
    callId: step.id,
    tool: step.tool,
    outcome,
    status: compensation?.response?.status ?? null,
    reasons: compensation?.policy.reasons ?? [],
    error: compensation?.error ?? null,
  });
  if (step.compensation?.outcome === 'compensated') return report('already_compensated', step.compensation);
  const tool = deps.tools.get(principal.env, step.tool);
  if (!tool?.compensate) return report('no_compensation', null);
  // The run as it stands now, so the policy sees what is being undone.
  const run = deps.runs.get(principal.env, runId)!;
  const check = deps.workflow.evaluateInput(tool.policy, toolCallInput('rollback', agent, tool, step.input, run, deps.runs.recent(run, HISTORY_STEPS), principal, request));
  const policy = stepPolicy(check);
  const at = new Date().toISOString();
  let compensation: Compensation;
  if (!check.verdict.allow || check.verdict.gate !== 'auto') {
    compensation = { outcome: check.verdict.allow ? 'needs_review' : 'denied', policy, request: null, response: null, error: null, at };
  } else {
    const exchange = await deps.sender.send(tool.compensate, { callId: step.id, tool: tool.name, input: step.input, result: jsonOf(step) }, stepTrace(runId, step));
    compensation = { outcome: exchange.ok ? 'compensated' : 'failed', policy, request: exchange.request, response: exchange.response, error: exchange.error, at: new Date().toISOString() };
  }
  const updated: Step = Object.assign({}, step, { compensation });
  await deps.store.commit(() => {
    const next = deps.runs.saveStep(principal.env, runId, updated);
    const kind = compensation.outcome === 'compensated' ? 'agent.tool_call.compensated' : compensation.outcome === 'failed' ? 'agent.tool_call.failed' : 'agent.tool_call.denied';
    deps.events.appendInTransaction(toolCallEvent(kind, compensation.outcome === 'compensated' || compensation.outcome === 'failed' ? 'EXECUTE' : 'POLICY_CHECK', next, updated, 'rollback'));
    deps.audit.appendInTransaction(
      operationDraft('SYSTEM', 'agent rollback', principal.keyId, compensation.response?.status ?? (compensation.outcome === 'compensated' ? 200 : compensation.outcome === 'failed' ? 502 : 403), {
        env: principal.env,
        code: compensation.error?.code ?? (compensation.outcome === 'denied' ? 'policy_denied' : null),
        decisionId: step.decisionId,
        policy: check.policy,
        moduleHash: check.moduleHash,
        inputDigest: check.inputDigest,
        result: verdictSummary(check.verdict),
      }),
    );
  });
  deps.events.announce();
  return report(compensation.outcome, compensation);
}

/** The tool's answer to the step, parsed, for its compensating action; null when it is not JSON. */
function jsonOf(step: Step): unknown {
  if (!step.response || step.response.truncated) return null;
  try {
    return JSON.parse(step.response.body);
  } catch {
    return null;
  }
}
