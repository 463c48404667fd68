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
}

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
  steps: Step[];
  startedAt: string;
  updatedAt: string;
}

/** Body and response excerpts kept per step. */
export const EXCERPT_BYTES = 4096;

/** Steps that count towards the run's spend: those not refused, withdrawn, or failed. */
const SPENDING: ReadonlySet<StepState> = new Set(['held', 'executing', 'executed']);

export function runSpend(run: RunRecord): number {
  return run.steps.reduce((sum, step) => (SPENDING.has(step.state) ? sum + step.spend : sum), 0);
}

export class RunStore {
  private readonly db: Database<RunRecord, [Env, string]>;
  /** Which run holds a step: held calls are found from their decision's subject. */
  private readonly stepRuns: Database<string, string>;

  constructor(store: Store) {
    this.db = store.database<RunRecord, [Env, string]>('agent-runs');
    this.stepRuns = store.database<string, string>('agent-steps');
  }

  open(principal: Principal, agentId: string, limits: RunLimits): RunRecord {
    const now = new Date().toISOString();
    return { id: sortableId('run_'), env: principal.env, agentId, keyId: principal.keyId, limits, state: 'open', stopReason: null, steps: [], startedAt: now, updatedAt: now };
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

  /** The run holding a step, with the step. */
  forStep(env: Env, stepId: string): { run: RunRecord; step: Step } | undefined {
    const runId = this.stepRuns.get(stepId);
    const run = runId === undefined ? undefined : this.db.get([env, runId]);
    const step = run?.steps.find((s) => s.id === stepId);
    return run && step ? { run, step } : undefined;
  }

  /** Stores a run; call inside `store.commit`. */
  write(run: RunRecord): void {
    this.db.put([run.env, run.id], run);
    for (const step of run.steps) if (this.stepRuns.get(step.id) === undefined) this.stepRuns.put(step.id, run.id);
  }

  /**
   * Re-reads the run inside the current write transaction and stores `change(run)`: steps move
   * on their own (a held call executes when its decision does) while a call is being judged, so
   * every write starts from what is stored.
   */
  update(env: Env, id: string, change: (run: RunRecord) => RunRecord): RunRecord {
    const current = this.db.get([env, id]);
    if (!current) throw new Error(`run ${id} vanished`);
    const next = { ...change(current), updatedAt: new Date().toISOString() };
    this.write(next);
    return next;
  }

  /** Runs with a step caught mid-call by a stop of the process. */
  *withExecuting(): Iterable<RunRecord> {
    for (const { value } of this.db.getRange()) if (value.steps.some((s) => s.state === 'executing')) yield value;
  }
}

/** A copy of the run with one step replaced. */
export function withStep(run: RunRecord, step: Step): RunRecord {
  return { ...run, steps: run.steps.map((s) => (s.id === step.id ? step : s)) };
}
