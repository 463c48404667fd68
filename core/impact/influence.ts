import type { Env } from '../env.ts';
import type { MemoryItem } from '../memory/item.ts';
import type { Memory } from '../memory/memory.ts';

/**
 * What a piece of evidence influenced: the decisions whose memory links to it. An input (or a
 * context value) reaches a decision through its `uses` edge, an objective through `serves`
 * (core/memory/decision-memory.ts). Each decision comes with its outcome as its current memory
 * version records it (status, gate, next action, reasons) and the version of the evidence its
 * edge names, which is the value the decision saw.
 */
export interface InfluencedDecision {
  decisionId: string;
  title: string;
  policy: string;
  status: string;
  gate: string | null;
  nextAction: string | null;
  reasons: string[];
  auditTrail: string | null;
  /** The decision's memory item version read. */
  memory: { id: string; version: number };
  /** The edge from the decision to the evidence, and the evidence version it names. */
  link: { relation: string; version: number };
}

/** The decisions linking to item `id` through `relation`, oldest first (decision ids sort by creation). */
export function influencedDecisions(memory: Memory, env: Env, id: string, relation: 'uses' | 'serves'): InfluencedDecision[] {
  return memory
    .linkedFrom(env, id, relation)
    .filter(({ item }) => item.namespace === 'decisions')
    .map(({ item, link }) => ({ ...outcome(item), memory: { id: item.id, version: item.version }, link: { relation: link.relation, version: link.version } }))
    .sort((a, b) => (a.decisionId < b.decisionId ? -1 : a.decisionId > b.decisionId ? 1 : 0));
}

/** How many of `decisions` ended in each status, statuses in alphabetical order. */
export function outcomeCounts(decisions: readonly InfluencedDecision[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const status of decisions.map((d) => d.status).sort()) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

function outcome(item: MemoryItem): Omit<InfluencedDecision, 'memory' | 'link'> {
  const a = item.attributes;
  return {
    decisionId: item.key,
    title: String(a.title ?? ''),
    policy: String(a.policy ?? ''),
    status: String(a.status ?? ''),
    gate: typeof a.gate === 'string' ? a.gate : null,
    nextAction: typeof a.nextAction === 'string' ? a.nextAction : null,
    reasons: Array.isArray(a.reasons) ? a.reasons.map(String) : [],
    auditTrail: typeof a.auditTrail === 'string' ? a.auditTrail : null,
  };
}
