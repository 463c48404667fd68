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
import type { AgentRecord, AgentRegistry } from './agents.ts';
import { validateToolInput } from './input-schema.ts';
import { exceededLimit } from './limits.ts';
import type { RunRecord, RunStore, Step, StepPolicy } from './runs.ts';
import { HISTORY_STEPS, heldCallFacts, toolCallInput } from './tool-call-input.ts';
import { stepTrace, type ToolSender } from './tool-sender.ts';
import type { ToolRecord, ToolRegistry } from './tools.ts';
import { log } from '../log.ts';
import { abandoned } from '../abandoned-work.ts';

/**
 * The tool-call state machine TOOL_CALL → POLICY_CHECK → HUMAN_APPROVAL → EXECUTE.
 *
 * A call is checked (tool on the agent, input valid), then admitted in one transaction: the run
 * must be open and within its limits, the tool's policy judges it against the run's counters
 * and last steps, and it is recorded as a step with its events, all before anything is sent.
 * Concurrent calls on one run are admitted one after another by the store's transactions, so
 * the limits and the history each policy sees are exact, while their tools execute side by side.
 * Then:
 *  - allowed with `gate: "auto"`: the tool's upstream is called and the outcome recorded;
 *  - allowed behind a gate: the call is held as a governed decision (subject
 *    `{type: "agent-tool-call", id: callId}`, governed by the tool's policy), like a held proxied
 *    request (core/held-requests.ts): executing the decision marks the step `executing` in the
 *    same transaction, and once that is committed the upstream is called;
 *  - denied: recorded as such, and refused.
 */
export type CallOutcome =
  | { kind: 'denied'; run: RunRecord; step: Step; check: PolicyCheck }
  | { kind: 'held'; run: RunRecord; step: Step; check: PolicyCheck; decision: DecisionRecord }
  | { kind: 'done'; run: RunRecord; step: Step; check: PolicyCheck; result: unknown };

export interface ToolCallBody {
  tool: string;
  input: Record<string, unknown>;
}

/** A call's admission: refused because the run is closed (or just closed by a limit), or recorded. */
type Admission = { kind: 'closed'; run: RunRecord } | { kind: 'recorded'; run: RunRecord; step: Step; check: PolicyCheck; decision: DecisionRecord | null };

interface Executed {
  run: RunRecord;
  step: Step;
  result: unknown;
}

export function stepPolicy(check: PolicyCheck): StepPolicy {
  const { allow, gate, reasons, error } = check.verdict;
  return { name: check.policy, moduleHash: check.moduleHash, inputDigest: check.inputDigest, durationNs: check.durationNs, allow, gate, reasons, error };
}

export class ToolCalls {
  private readonly queues = new Map<string, Promise<unknown>>();
  /** Executions under way (or about to be, once their admission commits), by run. */
  private readonly inFlight = new Map<string, Set<Promise<void>>>();

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

  /**
   * Runs `work` after every earlier piece of work on the same run has finished: two rollbacks of
   * one run must not both send the same compensating action.
   */
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
  async call(principal: Principal, runId: string, body: ToolCallBody, request: RequestFacts, traceparent?: string): Promise<CallOutcome> {
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

    const admission = this.store.commit(() => this.admit(principal, run.env, run.id, agent, tool, body.input, spend, request, traceparent));
    // Tracked before the admission commits, so a rollback that closes the run afterwards waits
    // for this call's tool to answer and undoes it too. An admission that fails is reported
    // by `admission` itself.
    const execution = this.track(
      run.id,
      admission.then(
        (admitted) => (admitted.kind === 'recorded' && admitted.step.state === 'executing' ? this.execute(run.env, run.id, admitted.step, tool, null) : null),
        () => null,
      ),
    );
    const admitted = await admission;
    this.events.announce();
    if (admitted.kind === 'closed') throw runClosed(admitted.run);
    const { step, check, decision } = admitted;
    if (step.state === 'denied') return { kind: 'denied', run: admitted.run, step, check };
    if (decision) return { kind: 'held', run: admitted.run, step, check, decision };
    const { run: done, step: final, result } = (await execution)!;
    return { kind: 'done', run: done, step: final, check, result };
  }

  /**
   * TOOL_CALL's run checks and POLICY_CHECK, with the step and its events recorded; runs inside
   * `store.commit`, reading the run as the transaction has it.
   */
  private admit(
    principal: Principal,
    env: Env,
    runId: string,
    agent: AgentRecord,
    tool: ToolRecord,
    input: Record<string, unknown>,
    spend: number,
    request: RequestFacts,
    traceparent: string | undefined,
  ): Admission {
    const run = this.runs.get(env, runId)!;
    if (run.state !== 'open') return { kind: 'closed', run };
    const limit = exceededLimit(run.limits, run, spend);
    if (limit) {
      const stopped = this.runs.update(env, runId, (r) => Object.assign({}, r, { state: 'stopped', stopReason: limit }));
      this.events.appendInTransaction(runStoppedEvent(stopped));
      return { kind: 'closed', run: stopped };
    }

    const policyInput = toolCallInput('tool_call', agent, tool, input, run, this.runs.recent(run, HISTORY_STEPS), principal, request);
    const check = this.workflow.evaluateInput(tool.policy, policyInput);
    const verdict = check.verdict;
    const now = new Date().toISOString();
    const step: Step = {
      id: sortableId('call_'),
      index: run.calls + 1,
      tool: tool.name,
      input,
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
      ...(traceparent ? { traceparent } : {}),
    };
    let decision: DecisionRecord | null = null;
    if (step.state === 'held') {
      const draft = this.workflow.draft(
        env,
        principal,
        { title: `Agent ${agent.name} calls tool ${tool.name}`, policy: tool.policy, context: `Tool call ${step.id} (step ${step.index}) of run ${run.id}.` },
        { type: 'agent-tool-call', id: step.id },
      );
      decision = this.workflow.applyCreate(draft, check);
      step.decisionId = decision.id;
    }
    const next = this.runs.saveStep(env, runId, step);
    this.events.appendInTransaction(toolCallEvent('agent.tool_call.requested', 'TOOL_CALL', next, Object.assign({}, step, { state: 'executing' })));
    const kind = step.state === 'denied' ? 'agent.tool_call.denied' : step.state === 'held' ? 'agent.tool_call.held' : 'agent.tool_call.allowed';
    this.events.appendInTransaction(toolCallEvent(kind, 'POLICY_CHECK', next, step));
    if (decision) {
      this.workflow.write(decision);
      this.events.appendInTransaction(decisionEvent(decision));
    }
    return { kind: 'recorded', run: next, step, check, decision };
  }

  /**
   * Calls the tool's upstream for a step already stored as `executing` and records the outcome
   * with its event; `audited` adds an audit entry (calls executed after an approval, which no
   * API request records).
   */
  private async execute(env: Env, runId: string, step: Step, tool: ToolRecord, audited: { keyId: string; decision: DecisionRecord } | null): Promise<Executed> {
    const exchange = await this.sender.send(tool.upstream, step.input, stepTrace(runId, step));
    const final: Step = {
      ...step,
      state: exchange.ok ? 'executed' : 'failed',
      request: exchange.request,
      response: exchange.response,
      error: exchange.error,
      completedAt: new Date().toISOString(),
    };
    const run = await this.store.commit(() => {
      const next = this.runs.saveStep(env, runId, final);
      this.events.appendInTransaction(toolCallEvent(exchange.ok ? 'agent.tool_call.executed' : 'agent.tool_call.failed', 'EXECUTE', next, final));
      if (audited) {
        this.audit.appendInTransaction(
          operationDraft('SYSTEM', 'agent tool call', audited.keyId, exchange.response?.status ?? FAILURE_STATUS[exchange.error?.code ?? ''] ?? 502, {
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
      const executing: Step = Object.assign({}, step, { state: 'executing' });
      const next = this.runs.saveStep(run.env, run.id, executing);
      event = toolCallEvent('agent.tool_call.allowed', 'HUMAN_APPROVAL', next, executing);
      const tool = this.tools.get(run.env, step.tool)!;
      const audited = { keyId: run.keyId, decision: record };
      this.store.afterCommit(() => {
        this.track(run.id, this.execute(run.env, run.id, executing, tool, audited)).catch((error: unknown) => log.error({ runId: run.id, err: error }, 'an approved tool call could not be recorded'));
      });
    } else if (record.status === 'rejected' || record.status === 'cancelled') {
      const withdrawn: Step = Object.assign({}, step, { state: 'withdrawn', completedAt: record.updatedAt });
      const next = this.runs.saveStep(run.env, run.id, withdrawn);
      event = toolCallEvent('agent.tool_call.denied', 'HUMAN_APPROVAL', next, withdrawn);
    } else {
      return;
    }
    this.events.appendInTransaction(event);
  }

  /** Counts `work` as in flight on `runId` until it settles; returns it. */
  private track<T>(runId: string, work: Promise<T>): Promise<T> {
    const running = work.then(
      () => {},
      () => {},
    );
    let runs = this.inFlight.get(runId);
    if (!runs) this.inFlight.set(runId, (runs = new Set()));
    const mine = runs;
    mine.add(running);
    void running.then(() => {
      mine.delete(running);
      if (mine.size === 0 && this.inFlight.get(runId) === mine) this.inFlight.delete(runId);
    });
    return work;
  }

  /** Resolves once every execution on `runId` started so far has stored its outcome. */
  async settled(runId: string): Promise<void> {
    for (let running = this.inFlight.get(runId); running; running = this.inFlight.get(runId)) await Promise.all(running);
  }

  /** Some execution has not stored its outcome yet. */
  get busy(): boolean {
    return this.inFlight.size > 0;
  }

  /** Resolves once every execution started so far has stored its outcome. */
  async idle(): Promise<void> {
    while (this.inFlight.size) await Promise.all([...this.inFlight.values()].flatMap((running) => [...running]));
  }

  /**
   * Marks steps caught mid-call by a stopped process as failed, never calling them again (the
   * tool may already have acted); returns how many.
   */
  async failInterrupted(alive: (node: string) => boolean = () => false): Promise<number> {
    const caught = [...this.runs.withExecuting()].filter(({ caller }) => abandoned(caller, this.store.nodeId, alive));
    if (caught.length === 0) return 0;
    const at = new Date().toISOString();
    const error = { code: 'interrupted', detail: 'the server stopped before the tool answered; the call is not made again' };
    await this.store.commit(() => {
      for (const { env, runId, step } of caught) this.runs.saveStep(env, runId, Object.assign({}, step, { state: 'failed', completedAt: at, error }));
    });
    return caught.length;
  }
}

/** The status an approved call's audit entry carries when its tool gave no answer. */
const FAILURE_STATUS: Record<string, number> = { upstream_timeout: 504, interrupted: 503 };

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
