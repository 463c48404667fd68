import type { RunRecord, Step } from '../agents/runs.ts';
import type { EventDraft } from './event.ts';

/**
 * Governed agents' events, under `agents/{agentId}` in the run's environment. Each stage of a
 * tool call is one event: `requested` (TOOL_CALL), then `allowed`, `denied` or `held`
 * (POLICY_CHECK; `allowed` and `denied` again when a human decides a held call, HUMAN_APPROVAL),
 * then `executed` or `failed` (EXECUTE). Rollback emits `compensated`, or `failed`/`denied`
 * with `action: "rollback"`; a run stopped by a limit emits `agent.run.stopped`.
 */
export type ToolCallEventKind = Extract<EventDraft['kind'], `agent.tool_call.${string}`>;

export type ToolCallStage = 'TOOL_CALL' | 'POLICY_CHECK' | 'HUMAN_APPROVAL' | 'EXECUTE';

export function toolCallEvent(kind: ToolCallEventKind, stage: ToolCallStage, run: RunRecord, step: Step, action: 'tool_call' | 'rollback' = 'tool_call'): EventDraft {
  return {
    kind,
    topic: `agents/${run.agentId}`,
    env: run.env,
    data: {
      agentId: run.agentId,
      runId: run.id,
      callId: step.id,
      index: step.index,
      tool: step.tool,
      action,
      stage,
      state: step.state,
      decisionId: step.decisionId,
      policy: step.policy.name,
      reasons: action === 'rollback' ? (step.compensation?.policy.reasons ?? []) : step.policy.reasons,
      status: (action === 'rollback' ? step.compensation?.response : step.response)?.status ?? null,
    },
  };
}

export function runStoppedEvent(run: RunRecord): EventDraft {
  return { kind: 'agent.run.stopped', topic: `agents/${run.agentId}`, env: run.env, data: { agentId: run.agentId, runId: run.id, state: run.state, reason: run.stopReason } };
}
