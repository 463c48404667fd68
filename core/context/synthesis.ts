import type { Env } from '../env.ts';
import { GatehouseError } from '../errors.ts';
import type { Memory } from '../memory/memory.ts';
import { BUDGET_LIMITS, LayerBudget, layerShares, type LayerReport } from './budget.ts';
import { detailedLayer, type DetailedLayer } from './detailed-layer.ts';
import { executiveLayer, type ExecutiveLayer } from './executive-layer.ts';
import { sourceRef, type SourceRef } from './lineage.ts';
import { rawLayer, type RawLayer } from './raw-layer.ts';
import { LAYERS, ROLES, type Layer, type Role } from './roles.ts';
import { gatherSources, orderForRole, type Subject } from './sources.ts';

/**
 * Context synthesis (beta): role-layered context about a decision or a question, built only from
 * memory, every statement citing the item versions it came from (docs/context.md).
 *
 * The answer is a function of the memory state and the request alone: the revision is fixed once
 * (the latest, or the one `asOf` names) and every read is made at it, sources are ordered by
 * fixed rules with no randomness, and no clock is read — the only time in the answer is the
 * stored `createdAt` of raw signals. The same request at the same revision gives the same bytes.
 */
export interface SynthesisRequest {
  subject: { decisionId?: string; query?: string };
  role: Role;
  /** Default: all three. */
  layers?: Layer[];
  /** Approximate tokens (core/context/budget.ts). */
  budget?: number;
  /** An ISO 8601 time or a memory revision: synthesise from memory as it stood then. */
  asOf?: string | number;
}

export interface Synthesis {
  subject: Subject;
  role: Role;
  /** The memory revision every statement was read at. */
  revision: number;
  budget: { unit: 'tokens'; total: number; used: number };
  /** Every source read, in the role's order. */
  sources: SourceRef[];
  layers: {
    executive?: ExecutiveLayer & LayerReport;
    detailed?: DetailedLayer & LayerReport;
    raw?: RawLayer & LayerReport;
  };
}

export class ContextSynthesis {
  constructor(private readonly memory: Memory) {}

  async synthesize(env: Env, request: SynthesisRequest): Promise<Synthesis> {
    const subject = checkSubject(request.subject);
    if (!ROLES.includes(request.role)) throw new GatehouseError('invalid_request', `role must be one of ${ROLES.join(', ')}`);
    const asked = request.layers ?? [...LAYERS];
    if (asked.length === 0) throw new GatehouseError('invalid_request', `layers must name at least one of ${LAYERS.join(', ')}`);
    const layers = LAYERS.filter((layer) => asked.includes(layer));
    const total = request.budget ?? BUDGET_LIMITS.default;
    if (!Number.isInteger(total) || total < BUDGET_LIMITS.min || total > BUDGET_LIMITS.max) {
      throw new GatehouseError('invalid_request', `budget must be an integer from ${BUDGET_LIMITS.min} to ${BUDGET_LIMITS.max} (approximate tokens)`);
    }

    const revision = this.memory.revision(env, request.asOf);
    const sources = orderForRole(await gatherSources(this.memory, env, subject, revision), request.role);
    const shares = layerShares(total, layers, request.role);
    const answer: Synthesis['layers'] = {};
    let carried = 0;
    let used = 0;
    for (const layer of layers) {
      const budget = new LayerBudget(shares[layer], carried);
      if (layer === 'executive') answer.executive = reported(budget, executiveLayer(sources, request.role, budget));
      if (layer === 'detailed') answer.detailed = reported(budget, detailedLayer(sources, budget));
      if (layer === 'raw') answer.raw = reported(budget, rawLayer(sources, budget));
      carried = budget.remaining;
      used += budget.used;
    }
    return { subject, role: request.role, revision, budget: { unit: 'tokens', total, used }, sources: sources.map(sourceRef), layers: answer };
  }
}

/** A layer's content after what it cost; `content` is built (and the budget spent) before this runs. */
function reported<T extends object>(budget: LayerBudget, content: T): LayerReport & T {
  return { ...budget.report(), ...content };
}

function checkSubject(subject: SynthesisRequest['subject']): Subject {
  const { decisionId, query } = subject;
  if ((decisionId === undefined) === (query === undefined)) throw new GatehouseError('invalid_request', 'subject must have exactly one of decisionId or query');
  if (decisionId !== undefined) {
    if (!/^dec_[0-9a-z]+$/.test(decisionId)) throw new GatehouseError('invalid_request', `subject.decisionId must be a decision id (dec_…), got '${decisionId}'`);
    return { decisionId };
  }
  return { query: query! };
}
