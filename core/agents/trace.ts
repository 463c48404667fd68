import type { DecisionStore } from '../decision-store.ts';
import type { RunRecord, StepPage } from './runs.ts';

/**
 * A run as GET /v1/agents/runs/{id} shows it: its header and a page of steps, each with its
 * input, the policy input and verdict (with the module hash that produced it), the approvals
 * recorded on a held call's decision, the upstream request and response excerpts, its
 * compensation, and its timings. `nextAfter` is the index to ask for the next page after, null
 * on the last.
 */
export function runTrace(run: RunRecord, page: StepPage, decisions: DecisionStore) {
  const { env: _env, ...rest } = run;
  return {
    ...rest,
    steps: page.steps.map((step) => {
      const decision = step.decisionId ? decisions.get(run.env, step.decisionId) : undefined;
      const completed = step.completedAt ? Date.parse(step.completedAt) - Date.parse(step.requestedAt) : null;
      return {
        ...step,
        approval: decision
          ? { decisionId: decision.id, status: decision.status, approvals: decision.approvals, history: decision.history, auditTrail: decision.auditTrail }
          : null,
        timings: { requestedAt: step.requestedAt, completedAt: step.completedAt, totalMs: completed, policyMs: step.policy.durationNs / 1e6, upstreamMs: step.response?.latencyMs ?? null },
      };
    }),
    nextAfter: page.next,
  };
}
