import type { Database } from 'lmdb';
import type { Env } from '../env.ts';
import { GatehouseError } from '../errors.ts';
import { sortableId } from '../ids.ts';
import type { Principal } from '../principal.ts';
import type { Store } from '../store.ts';
import type { RunLimits } from './limits.ts';

/**
 * Runs: one agent's session of tool calls, opened by one API key and usable only by it (in its
 * environment). A run keeps every step, which is the trace GET /v1/agents/runs/{id} returns and
 * what replay and rollback work from.
 *
 * Storage: the run record is a header (agent, key, limits, state and counters) and each step is
 * its own record keyed `[runId, index]`. A step's write updates the header's counters in the
 * same transaction, so a call costs the same few writes however long the run is, and the trace,
 * replay and rollback read the steps by range, a page at a time.
 *
 * A step moves TOOL_CALL → POLICY_CHECK → (HUMAN_APPROVAL) → EXECUTE:
 *
 *   denied                                     the policy refused it
 *   held ──approve… execute──> executing       a human must approve; its decision governs it
 *     └──reject / cancel──> withdrawn
 *   executing ──> executed | failed            the upstream answered 2xx | did not, or not at all
 */
export type StepState = 'denied' | 'held' | 'executing' | 'executed' | 'failed' | 'withdrawn';

export type RunState = 'open' | 'stopped' | 'rolled_back';

/** A policy evaluation as a step records it: enough to replay it and to explain it. */
export interface StepPolicy {
  name: string;
  moduleHash: string;
  inputDigest: string;
  durationNs: number;
  allow: boolean;
  gate: string;
  reasons: string[];
  error: string | null;
}

export interface UpstreamExcerpt {
  method: string;
  url: string;
  /** The request body (the input as JSON), cut at EXCERPT_BYTES. */
  body: string;
}

export interface ResponseExcerpt {
  status: number;
  headers: Record<string, string>;
  /** The response body as text, cut at EXCERPT_BYTES; `truncated` when there was more. */
  body: string;
  truncated: boolean;
  latencyMs: number;
}

export interface Compensation {
  outcome: 'compensated' | 'failed' | 'denied' | 'needs_review';
  policy: StepPolicy;
  request: UpstreamExcerpt | null;
  response: ResponseExcerpt | null;
  error: { code: string; detail: string } | null;
  at: string;
}

export interface Step {
  /** `call_…`; a held call's decision names it as its subject. */
  id: string;
  /** 1-based position in the run. */
  index: number;
  tool: string;
  input: Record<string, unknown>;
  /** What the call spends (the tool's spend field), 0 for tools without one. */
  spend: number;
  /** The exact document the policy evaluated: replay evaluates it again. */
  policyInput: Record<string, unknown>;
  policy: StepPolicy;
  state: StepState;
  decisionId: string | null;
  request: UpstreamExcerpt | null;
  response: ResponseExcerpt | null;
  error: { code: string; detail: string } | null;
  requestedAt: string;
  completedAt: string | null;
  /** Set once rollback has run this step's compensating action. */
  compensation: Compensation | null;
  /**
   * The W3C traceparent the calling request came with: the tool's exchange (also one sent after
   * an approval) and its compensation continue that trace. Absent in steps stored before it was kept.
   */
  traceparent?: string;
}

/** How many steps of a run each kind of state holds. */
export type StateCounts = Record<StepState, number>;

/** A run's header: everything but its steps, which are records of their own. */
export interface RunRecord {
  id: string;
  env: Env;
  agentId: string;
  /** The key that opened the run: the only one that may act in it. */
  keyId: string;
  limits: RunLimits;
  state: RunState;
  /** Why the run stopped (`limit:spend`, …, or `rollback`), null while open. */
  stopReason: string | null;
  /** Steps recorded, refused ones included: the next step's index is `calls + 1`. */
  calls: number;
  /** The sum of `spend` over the steps `held`, `executing` or `executed`. */
  spend: number;
  /** Steps by state and calls by tool: what a policy can no longer count from a bounded history. */
  byState: StateCounts;
  byTool: Record<string, number>;
  startedAt: string;
  updatedAt: string;
}

/** Body and response excerpts kept per step. */
export const EXCERPT_BYTES = 4096;

/** Steps that count towards the run's spend: those not refused, withdrawn, or failed. */
const SPENDING: ReadonlySet<StepState> = new Set(['held', 'executing', 'executed']);

/**
 * A step as the policy sees it in `run.history`, stored beside the step itself: the last steps
 * of a run (and a step's state before it moves on) are read without decoding whole steps.
 */
export interface StepSummary {
  index: number;
  tool: string;
  state: StepState;
  spend: number;
  allow: boolean;
  gate: string;
}

function stepSummary(step: Step): StepSummary {
  return { index: step.index, tool: step.tool, state: step.state, spend: step.spend, allow: step.policy.allow, gate: step.policy.gate };
}

const spent = (entry: StepSummary | undefined): number => (entry && SPENDING.has(entry.state) ? entry.spend : 0);

type StepKey = [runId: string, index: number];

/** Steps read at once while walking a whole run: a long run is never held in memory. */
const READ_PAGE = 200;

/** A page of a run's steps and the index to continue after, null on the last page. */
export interface StepPage {
  steps: Step[];
  next: number | null;
}

export class RunStore {
  private readonly db: Database<RunRecord, [Env, string]>;
  private readonly steps: Database<Step, StepKey>;
  private readonly history: Database<StepSummary, StepKey>;
  /** Where each call's step is: held calls are found from their decision's subject. */
  private readonly callSteps: Database<StepKey, string>;
  /** Steps being executed, so those a stopped process left behind are found without a scan. */
  /** Steps whose tool is being called → the instance calling it (true on a single node). */
  private readonly executing: Database<string | true, [Env, ...StepKey]>;

  constructor(private readonly store: Store) {
    this.db = store.database<RunRecord, [Env, string]>('agent-runs');
    this.steps = store.database<Step, StepKey>('agent-run-steps');
    this.history = store.database<StepSummary, StepKey>('agent-run-history');
    this.callSteps = store.database<StepKey, string>('agent-call-steps');
    this.executing = store.database<string | true, [Env, ...StepKey]>('agent-steps-executing');
  }

  open(principal: Principal, agentId: string, limits: RunLimits): RunRecord {
    const now = new Date().toISOString();
    const byState: StateCounts = { denied: 0, held: 0, executing: 0, executed: 0, failed: 0, withdrawn: 0 };
    return { id: sortableId('run_'), env: principal.env, agentId, keyId: principal.keyId, limits, state: 'open', stopReason: null, calls: 0, spend: 0, byState, byTool: {}, startedAt: now, updatedAt: now };
  }

  /** The run, if `principal` opened it; any other key (or environment) is told it does not exist. */
  load(principal: Principal, id: string): RunRecord {
    const run = this.db.get([principal.env, id]);
    if (!run || run.keyId !== principal.keyId) throw new GatehouseError('not_found', `no run ${id}`);
    return run;
  }

  get(env: Env, id: string): RunRecord | undefined {
    return this.db.get([env, id]);
  }

  /** The run holding a call's step, with the step. */
  forStep(env: Env, callId: string): { run: RunRecord; step: Step } | undefined {
    const key = this.callSteps.get(callId);
    const run = key && this.db.get([env, key[0]]);
    const step = run && this.steps.get(key);
    return run && step ? { run, step } : undefined;
  }

  /** Up to `limit` steps after index `after`, oldest first. */
  page(run: RunRecord, after: number, limit: number): StepPage {
    const steps = [...this.steps.getRange({ start: [run.id, after + 1], end: [run.id, run.calls + 1], limit }).map(({ value }) => value)];
    const last = steps.at(-1)?.index;
    return { steps, next: last !== undefined && last < run.calls ? last : null };
  }

  /** The run's last `count` steps as its history shows them, oldest first. */
  recent(run: RunRecord, count: number): StepSummary[] {
    return [...this.history.getRange({ start: [run.id, run.calls], end: [run.id, 0], reverse: true, limit: count }).map(({ value }) => value)].reverse();
  }

  /** The run's steps newest first, read a page at a time as the caller goes on. */
  *newestFirst(run: RunRecord): Iterable<Step> {
    for (let before = run.calls + 1; ; ) {
      const page = this.stepsBefore(run.id, before, READ_PAGE);
      yield* page;
      if (page.length < READ_PAGE) return;
      before = page.at(-1)!.index;
    }
  }

  /** Stores a run's header; call inside `store.commit`. */
  write(run: RunRecord): void {
    this.db.put([run.env, run.id], run);
  }

  /**
   * Re-reads the header inside the current write transaction and stores `change(run)`: calls
   * and held steps move on their own, so every write starts from what is stored.
   */
  update(env: Env, id: string, change: (run: RunRecord) => RunRecord): RunRecord {
    const next = { ...change(this.current(env, id)), updatedAt: new Date().toISOString() };
    this.write(next);
    return next;
  }

  /**
   * Stores a step, new or moved on, and brings the header's counters along in the same
   * transaction; returns the header. Call inside `store.commit`.
   */
  saveStep(env: Env, runId: string, step: Step): RunRecord {
    const key: StepKey = [runId, step.index];
    const before = this.history.get(key);
    const after = stepSummary(step);
    const next = this.update(env, runId, (run) => Object.assign({}, run, countersAfter(run, before, after)));
    this.steps.put(key, step);
    this.history.put(key, after);
    if (!before) this.callSteps.put(step.id, key);
    if (step.state === 'executing') this.executing.put([env, ...key], this.store.nodeId ?? true);
    else if (before?.state === 'executing') this.executing.remove([env, ...key]);
    return next;
  }

  /** Steps whose tool is being called (or was, when a process stopped), with their runs' ids and environments and who calls it. */
  *withExecuting(): Iterable<{ env: Env; runId: string; step: Step; caller: string | undefined }> {
    for (const { key, value } of this.executing.getRange()) {
      const [env, runId, index] = key;
      const step = this.steps.get([runId, index]);
      if (step) yield { env, runId, step, caller: value === true ? undefined : value };
    }
  }

  /** Up to `limit` steps before index `before`, newest first. */
  private stepsBefore(runId: string, before: number, limit: number): Step[] {
    return [...this.steps.getRange({ start: [runId, before - 1], end: [runId, 0], reverse: true, limit }).map(({ value }) => value)];
  }

  private current(env: Env, id: string): RunRecord {
    const run = this.db.get([env, id]);
    if (!run) throw new Error(`run ${id} vanished`);
    return run;
  }
}

/** The header's counters once `after` replaces `before` (undefined for a new step). */
function countersAfter(run: RunRecord, before: StepSummary | undefined, after: StepSummary): Pick<RunRecord, 'calls' | 'spend' | 'byState' | 'byTool'> {
  const byState = Object.assign({}, run.byState, { [after.state]: run.byState[after.state] + 1 });
  if (before) byState[before.state]--;
  // Only a change of spend is applied: adding and taking back the same float can drift.
  const delta = spent(after) - spent(before);
  return {
    calls: before ? run.calls : run.calls + 1,
    spend: delta === 0 ? run.spend : run.spend + delta,
    byState,
    byTool: before ? run.byTool : Object.assign({}, run.byTool, { [after.tool]: (run.byTool[after.tool] ?? 0) + 1 }),
  };
}
