import type { AuditEntry, AuditLog } from '../audit-log.ts';
import type { DecisionStore } from '../decision-store.ts';
import type { Env } from '../env.ts';
import { GatehouseError } from '../errors.ts';
import { decisionTopic } from '../events/decision-events.ts';
import type { EventLog } from '../events/event-log.ts';
import { idSuffix } from '../ids.ts';
import type { Memory } from '../memory/memory.ts';
import { OBJECTIVES, type Objectives } from '../memory/objectives.ts';
import type { Webhooks } from '../webhooks/webhooks.ts';
import { decisionSummary, traceSteps, type DecisionSummary, type TraceStep } from './decision-trace.ts';
import { influencedDecisions, outcomeCounts, type InfluencedDecision } from './influence.ts';
import { pageByKey, type PageRequest } from './pagination.ts';
import { deliveriesOf } from './webhook-trail.ts';

/**
 * Impact tracing: for a decision (by id or by trace reference) the ordered trace of everything
 * it went through (core/impact/decision-trace.ts); for an input or an objective, the decisions
 * it influenced and how they ended (core/impact/influence.ts). Everything is confined to one
 * environment and paginated by keyset cursors (core/impact/pagination.ts).
 */
export type TraceTarget = { decision: string } | { ref: string } | { input: string } | { objective: string };

export interface DecisionTracePage {
  kind: 'decision';
  /** The trace reference (`trace_…`): a decision's and its audit entries' shared reference. */
  ref: string;
  /** The decision, or null for a refused creation (nothing was stored). */
  decisionId: string | null;
  decision: DecisionSummary | null;
  /** The audit entries this page's `request` steps stand for, in full (hashes included). */
  entries: AuditEntry[];
  steps: TraceStep[];
  nextCursor: string | null;
}

export interface InfluencePage {
  kind: 'input' | 'objective';
  /** The evidence traced, at its newest version. */
  subject: { id: string; namespace: string; key: string; version: number; text: string };
  /** All the decisions influenced, counted by status (not only this page's). */
  outcomes: Record<string, number>;
  total: number;
  decisions: InfluencedDecision[];
  nextCursor: string | null;
}

const DECISION_ID = /^dec_[0-9a-z]+$/;
const TRACE_REF = /^(trace|dec)_[0-9a-z]+$/;
const LABEL = /^[a-z0-9][a-z0-9_.-]{0,63}:[A-Za-z0-9_./-]{1,191}$/;

export interface ImpactSources {
  audit: AuditLog;
  decisions: DecisionStore;
  events: EventLog;
  webhooks: Webhooks;
  memory: Memory;
  objectives: Objectives;
}

export class ImpactTrace {
  constructor(private readonly sources: ImpactSources) {}

  /** The trace of `target` in `env`, one page of it. */
  async trace(env: Env, target: TraceTarget, page: PageRequest): Promise<DecisionTracePage | InfluencePage> {
    if ('decision' in target) {
      if (!DECISION_ID.test(target.decision)) throw new GatehouseError('invalid_request', `decision must be a decision id (dec_…), got '${target.decision}'`);
      if (!this.sources.decisions.get(env, target.decision)) throw new GatehouseError('not_found', `no decision ${target.decision}`);
      return this.decisionTrace(env, target.decision, page);
    }
    if ('ref' in target) {
      if (!TRACE_REF.test(target.ref)) throw new GatehouseError('invalid_request', 'ref must be a trace_… reference or a dec_… id');
      return this.decisionTrace(env, target.ref, page);
    }
    if ('input' in target) return this.influence(env, 'input', this.inputId(env, target.input), page);
    const id = this.sources.objectives.resolve(env, target.objective);
    if (id === undefined) throw new GatehouseError('not_found', `no objective '${target.objective}' (give its id, key or title)`);
    return this.influence(env, 'objective', id, page);
  }

  private async decisionTrace(env: Env, ref: string, page: PageRequest): Promise<DecisionTracePage> {
    const suffix = idSuffix(ref);
    const traceRef = `trace_${suffix}`;
    const decisionId = `dec_${suffix}`;
    const entries = this.sources.audit.trace(env, traceRef);
    const decision = this.sources.decisions.get(env, decisionId);
    if (entries.length === 0 && !decision) throw new GatehouseError('not_found', `no audit entries for ${ref}`);
    // A refused creation's `policy.denied` event carries the id the decision would have had.
    const events = this.sources.events.ofTopic(env, decisionTopic(decisionId));
    const steps = traceSteps({ entries, decision, events, deliveries: deliveriesOf(this.sources.webhooks, env, events) });
    const { data, nextCursor } = pageByKey(steps, (step) => step.key, page);
    const shown = new Set(data.flatMap(({ step }) => (step.type === 'request' ? [step.seq] : [])));
    return {
      kind: 'decision',
      ref: traceRef,
      decisionId: decision ? decisionId : null,
      decision: decision ? decisionSummary(decision) : null,
      entries: entries.filter((entry) => shown.has(entry.seq)),
      steps: data.map(({ step }) => step),
      nextCursor,
    };
  }

  /** An input given as `namespace:key` (or a memory item id). */
  private inputId(env: Env, input: string): string {
    if (input.startsWith('mem_')) return input;
    if (!LABEL.test(input)) throw new GatehouseError('invalid_request', `input must be a namespace:name label (e.g. finance:budget_q3) or a memory item id, got '${input}'`);
    const id = this.sources.memory.resolve(env, input);
    if (id === undefined) throw new GatehouseError('not_found', `no memory item for input ${input}`);
    return id;
  }

  private influence(env: Env, kind: 'input' | 'objective', id: string, page: PageRequest): InfluencePage {
    const item = this.sources.memory.versions(env, id).at(-1)!;
    if (kind === 'input' && item.namespace === OBJECTIVES) throw new GatehouseError('invalid_request', `${id} is an objective: trace it with objective=`);
    const decisions = influencedDecisions(this.sources.memory, env, id, kind === 'input' ? 'uses' : 'serves');
    const { data, nextCursor } = pageByKey(decisions, (decision) => decision.decisionId, page);
    return {
      kind,
      subject: { id: item.id, namespace: item.namespace, key: item.key, version: item.version, text: item.text },
      outcomes: outcomeCounts(decisions),
      total: decisions.length,
      decisions: data,
      nextCursor,
    };
  }
}
