import type { DecisionWorkflow } from '../decision-workflow.ts';
import { GatehouseError } from '../errors.ts';
import type { PolicyEvaluator } from '../policy-evaluator.ts';
import type { RunRecord, StepPage } from './runs.ts';

/**
 * "What would this policy have done?" Every recorded step's stored policy input is evaluated
 * again, against the policy version named (`agent-tools-v2`) or, without one, the policy each
 * step was judged by as it is loaded now. Nothing is called and nothing is stored: the answer is
 * a step-by-step diff of verdicts, a page of steps at a time (`nextAfter` continues), so a long
 * run never holds the server for long. A step counts as changed when `allow`, `gate` or the set
 * of reasons differs.
 */
export interface VerdictView {
  policy: string;
  moduleHash: string;
  allow: boolean;
  gate: string;
  reasons: string[];
}

export interface ReplayedStep {
  step: number;
  callId: string;
  tool: string;
  before: VerdictView;
  after: VerdictView;
  changed: boolean;
}

export function replayRun(
  run: RunRecord,
  page: StepPage,
  workflow: DecisionWorkflow,
  evaluator: PolicyEvaluator,
  policy?: string,
): { runId: string; policy: string | null; steps: ReplayedStep[]; changed: number; nextAfter: number | null } {
  if (policy !== undefined && !evaluator.has(policy)) {
    throw new GatehouseError('unknown_policy', `no policy named ${policy} is loaded`, { policies: evaluator.names() });
  }
  const steps = page.steps.map((step): ReplayedStep => {
    const check = workflow.evaluateInput(policy ?? step.policy.name, step.policyInput);
    const before: VerdictView = { policy: step.policy.name, moduleHash: step.policy.moduleHash, allow: step.policy.allow, gate: step.policy.gate, reasons: step.policy.reasons };
    const { allow, gate, reasons } = check.verdict;
    const after: VerdictView = { policy: check.policy, moduleHash: check.moduleHash, allow, gate, reasons };
    const changed = before.allow !== after.allow || before.gate !== after.gate || !sameSet(before.reasons, after.reasons);
    return { step: step.index, callId: step.id, tool: step.tool, before, after, changed };
  });
  return { runId: run.id, policy: policy ?? null, steps, changed: steps.filter((s) => s.changed).length, nextAfter: page.next };
}

function sameSet(a: string[], b: string[]): boolean {
  const set = new Set(a);
  return set.size === new Set(b).size && b.every((x) => set.has(x));
}
