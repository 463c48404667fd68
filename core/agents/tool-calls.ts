import { operationDraft, type AuditLog } from '../audit-log.ts';
import type { DecisionRecord } from '../decision.ts';
import type { DecisionWorkflow, PolicyCheck } from '../decision-workflow.ts';
import { decisionEvent } from '../events/decision-events.ts';
import { runStoppedEvent, toolCallEvent } from '../events/agent-events.ts';
import type { EventDraft } from '../events/event.ts';
import type { EventLog } from '../events/event-log.ts';
import type { Env } from '../env.ts';
import { GatehouseError } from '../errors.ts';
import { sortableId } from '../ids.ts';
import type { RequestFacts } from '../policy-input.ts';
import type { Principal } from '../principal.ts';
import type { Store } from '../store.ts';
import type { AgentRegistry } from './agents.ts';
import { validateToolInput } from './input-schema.ts';
import { exceededLimit } from './limits.ts';
import { runSpend, withStep, type RunRecord, type RunStore, type Step, type StepPolicy } from './runs.ts';
import { heldCallFacts, toolCallInput } from './tool-call-input.ts';
import type { ToolSender } from './tool-sender.ts';
import type { ToolRecord, ToolRegistry } from './tools.ts';

/**
 * The tool-call state machine TOOL_CALL → POLICY_CHECK → HUMAN_APPROVAL → EXECUTE.
 *
 * A call is checked (run open and within its limits, tool on the agent, input valid), judged by
 * the tool's policy, and recorded as a step with its events in one transaction before anything
 * is sent. Then:
 *  - allowed with `gate: "auto"`: the tool's upstream is called and the outcome recorded;
 *  - allowed behind a gate: the call is held as a governed decision (subject
 *    `{type: "agent-tool-call", id: callId}`, governed by the tool's policy), like a held proxied
 *    request (core/held-requests.ts): executing the decision marks the step `executing` in the
 *    same transaction, and once that is committed the upstream is called;
 *  - denied: recorded as such, and refused.
 * Calls on one run are serialised (`exclusive`), so limits and the history a policy sees hold.
 */
export type CallOutcome =
  | { kind: 'denied'; run: RunRecord; step: Step; check: PolicyCheck }
  | { kind: 'held'; run: RunRecord; step: Step; check: PolicyCheck; decision: DecisionRecord }
  | { kind: 'done'; run: RunRecord; step: Step; check: PolicyCheck; result: unknown };

export interface ToolCallBody {
  tool: string;
  input: Record<string, unknown>;
}

export function stepPolicy(check: PolicyCheck): StepPolicy {
  const { allow, gate, reasons, error } = check.verdict;
  return { name: check.policy, moduleHash: check.moduleHash, inputDigest: check.inputDigest, durationNs: check.durationNs, allow, gate, reasons, error };
}

export class ToolCalls {
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly executing = new Set<Promise<void>>();

  constructor(
    private readonly store: Store,
    private readonly workflow: DecisionWorkflow,
    private readonly audit: AuditLog,
    private readonly events: EventLog,
    private readonly tools: ToolRegistry,
    private readonly agents: AgentRegistry,
    private readonly runs: RunStore,
    private readonly sender: ToolSender,
  ) {
    workflow.use({
      facts: (decision) => {
        const found = this.heldStep(decision);
        return found && heldCallFacts(found.step.policyInput, found.run);
      },
      written: (record) => this.follow(record),
    });
  }

  /** Runs `work` after every earlier piece of work on the same run has finished. */
  exclusive<T>(runId: string, work: () => Promise<T>): Promise<T> {
    const before = this.queues.get(runId) ?? Promise.resolve();
    const mine = before.then(work, work);
    const tail = mine.catch(() => {});
    this.queues.set(runId, tail);
    void tail.then(() => {
      if (this.queues.get(runId) === tail) this.queues.delete(runId);
    });
    return mine;
  }

  /** One tool call in `runId` by the key that opened it; see the class comment. */
  call(principal: Principal, runId: string, body: ToolCallBody, request: RequestFacts): Promise<CallOutcome> {
    return this.exclusive(runId, () => this.callNow(principal, runId, body, request));
  }

  private async callNow(principal: Principal, runId: string, body: ToolCallBody, request: RequestFacts): Promise<CallOutcome> {
    const run = this.runs.load(principal, runId);
    if (run.state !== 'open') throw runClosed(run);
    const agent = this.agents.load(run.env, run.agentId);
    if (!agent.tools.includes(body.tool)) {
      throw new GatehouseError('forbidden', `agent ${agent.name} may not call tool ${body.tool}`, { tool: body.tool, tools: agent.tools });
    }
    const tool = this.tools.get(run.env, body.tool);
    if (!tool) throw new GatehouseError('not_found', `no tool named ${body.tool}`);
    validateToolInput(tool.name, tool.inputSchema, body.input);
    const spend = spendOf(tool, body.input);
    const limit = exceededLimit(run.limits, { calls: run.steps.length, spend: runSpend(run), startedAt: run.startedAt }, spend);
    if (limit) {
      const stopped = await this.store.commit(() => {
        const next = this.runs.update(run.env, run.id, (r) => ({ ...r, state: 'stopped', stopReason: limit }));
        this.events.appendInTransaction(runStoppedEvent(next));
        return next;
      });
      this.events.announce();
      throw runClosed(stopped);
    }

    const policyInput = toolCallInput('tool_call', agent, tool, body.input, run, principal, request);
    const check = this.workflow.evaluateInput(tool.policy, policyInput);
    const verdict = check.verdict;
    const now = new Date().toISOString();
    const step: Step = {
      id: sortableId('call_'),
      index: run.steps.length + 1,
      tool: tool.name,
      input: body.input,
      spend,
      policyInput,
      policy: stepPolicy(check),
      state: !verdict.allow ? 'denied' : verdict.gate === 'auto' ? 'executing' : 'held',
      decisionId: null,
      request: null,
      response: null,
      error: null,
      requestedAt: now,
      completedAt: verdict.allow ? null : now,
      compensation: null,
    };
    let decision: DecisionRecord | null = null;
    if (step.state === 'held') {
      const draft = this.workflow.draft(
        run.env,
        principal,
        { title: `Agent ${agent.name} calls tool ${tool.name}`, policy: tool.policy, context: `Tool call ${step.id} (step ${step.index}) of run ${run.id}.` },
        { type: 'agent-tool-call', id: step.id },
      );
      decision = this.workflow.applyCreate(draft, check);
      step.decisionId = decision.id;
    }
    const recorded = await this.store.commit(() => {
      const next = this.runs.update(run.env, run.id, (r) => ({ ...r, steps: [...r.steps, step] }));
      this.events.appendInTransaction(toolCallEvent('agent.tool_call.requested', 'TOOL_CALL', next, { ...step, state: 'executing' }));
      const kind = step.state === 'denied' ? 'agent.tool_call.denied' : step.state === 'held' ? 'agent.tool_call.held' : 'agent.tool_call.allowed';
      this.events.appendInTransaction(toolCallEvent(kind, 'POLICY_CHECK', next, step));
      if (decision) {
        this.workflow.write(decision);
        this.events.appendInTransaction(decisionEvent(decision));
      }
      return next;
    });
    this.events.announce();
    if (step.state === 'denied') return { kind: 'denied', run: recorded, step, check };
    if (decision) return { kind: 'held', run: recorded, step, check, decision };
    const { run: done, step: final, result } = await this.execute(run.env, run.id, step.id, tool, null);
    return { kind: 'done', run: done, step: final, check, result };
  }

  /**
   * Calls the tool's upstream for a step already stored as `executing` and records the outcome
   * with its event; `audited` adds an audit entry (calls executed after an approval, which no
   * API request records).
   */
  private async execute(env: Env, runId: string, stepId: string, tool: ToolRecord, audited: { keyId: string; decision: DecisionRecord } | null) {
    const found = this.runs.forStep(env, stepId)!;
    const exchange = await this.sender.send(tool.upstream, found.step.input);
    const final: Step = {
      ...found.step,
      state: exchange.ok ? 'executed' : 'failed',
      request: exchange.request,
      response: exchange.response,
      error: exchange.error,
      completedAt: new Date().toISOString(),
    };
    const run = await this.store.commit(() => {
      const next = this.runs.update(env, runId, (r) => withStep(r, final));
      this.events.appendInTransaction(toolCallEvent(exchange.ok ? 'agent.tool_call.executed' : 'agent.tool_call.failed', 'EXECUTE', next, final));
      if (audited) {
        this.audit.appendInTransaction(
          operationDraft('SYSTEM', 'agent tool call', audited.keyId, exchange.response?.status ?? (exchange.error?.code === 'upstream_timeout' ? 504 : 502), {
            env,
            code: exchange.error?.code ?? null,
            decisionId: audited.decision.id,
            traceRef: audited.decision.auditTrail,
          }),
        );
      }
      return next;
    });
    this.events.announce();
    return { run, step: final, result: exchange.json };
  }

  /** The held step a decision governs, if it governs one. */
  private heldStep(decision: DecisionRecord): { run: RunRecord; step: Step } | undefined {
    if (decision.subject?.type !== 'agent-tool-call') return undefined;
    return this.runs.forStep(decision.env, decision.subject.id);
  }

  /** Moves a held step along with its decision; runs inside the decision's write transaction. */
  private follow(record: DecisionRecord): void {
    const found = this.heldStep(record);
    if (!found || found.step.state !== 'held') return;
    const { run, step } = found;
    let event: EventDraft;
    if (record.status === 'executed') {
      const next = this.runs.update(run.env, run.id, (r) => withStep(r, { ...step, state: 'executing' }));
      event = toolCallEvent('agent.tool_call.allowed', 'HUMAN_APPROVAL', next, { ...step, state: 'executing' });
      const tool = this.tools.get(run.env, step.tool)!;
      const requester = run.keyId;
      this.store.afterCommit(() => this.dispatch(() => this.execute(run.env, run.id, step.id, tool, { keyId: requester, decision: record })));
    } else if (record.status === 'rejected' || record.status === 'cancelled') {
      const withdrawn: Step = { ...step, state: 'withdrawn', completedAt: record.updatedAt };
      const next = this.runs.update(run.env, run.id, (r) => withStep(r, withdrawn));
      event = toolCallEvent('agent.tool_call.denied', 'HUMAN_APPROVAL', next, withdrawn);
    } else {
      return;
    }
    this.events.appendInTransaction(event);
  }

  private dispatch(work: () => Promise<unknown>): void {
    const running = work().then(
      () => {},
      (error) => console.error('gatehouse: an approved tool call could not be recorded', error),
    );
    this.executing.add(running);
    void running.finally(() => this.executing.delete(running));
  }

  /** Resolves once every approved call started so far has stored its outcome. */
  async idle(): Promise<void> {
    while (this.executing.size) await Promise.all(this.executing);
  }

  /**
   * Marks steps caught mid-call by a stopped process as failed, never calling them again (the
   * tool may already have acted); returns how many.
   */
  async failInterrupted(): Promise<number> {
    const runs = [...this.runs.withExecuting()];
    if (runs.length === 0) return 0;
    let count = 0;
    const at = new Date().toISOString();
    await this.store.commit(() => {
      for (const run of runs) {
        this.runs.update(run.env, run.id, (r) => ({
          ...r,
          steps: r.steps.map((s) => {
            if (s.state !== 'executing') return s;
            count++;
            return { ...s, state: 'failed', completedAt: at, error: { code: 'interrupted', detail: 'the server stopped before the tool answered; the call is not made again' } };
          }),
        }));
      }
    });
    return count;
  }
}

/** The amount a call spends: its spend field (a number, by the tool's schema), or 0. */
function spendOf(tool: ToolRecord, input: Record<string, unknown>): number {
  const value = tool.spendField ? input[tool.spendField] : undefined;
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

function runClosed(run: RunRecord): GatehouseError {
  return new GatehouseError('conflict', `run ${run.id} is ${run.state}${run.stopReason ? ` (${run.stopReason})` : ''}: it takes no more tool calls`, {
    runId: run.id,
    state: run.state,
    reason: run.stopReason,
  });
}
