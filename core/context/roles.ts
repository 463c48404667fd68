import type { SourceKind } from './sources.ts';

/**
 * What each role is shown first. A role never hides evidence or invents any; it changes the
 * order of sources (so what survives a tight budget), which attributes count as key figures, how
 * many sentences the executive summary takes, and how the budget is shared between layers:
 *
 *   executive  the decision and what it serves, outcome first; most budget to the summary
 *   analyst    the evidence (inputs, context values, matches) first, every numeric value;
 *              most budget to the facts grouped by source
 *   operator   the decision's state, the policy module and approvers first (status, gate, next
 *              action, module hash); most budget to the raw signals
 */
export const ROLES = ['executive', 'analyst', 'operator'] as const;
export type Role = (typeof ROLES)[number];

export const LAYERS = ['executive', 'detailed', 'raw'] as const;
export type Layer = (typeof LAYERS)[number];

/** A key-figure attribute name, or `#number` for every finite numeric attribute. */
export type FigureSpec = string;

export interface RoleProfile {
  /** Source kinds in the order shown; within a kind, sources keep their relevance order. */
  kinds: readonly SourceKind[];
  /** Per source, which attributes become key figures, in this order. */
  figures: readonly FigureSpec[];
  /** At most this many key figures. */
  maxFigures: number;
  /** At most this many sentences in the executive summary. */
  summarySentences: number;
  /** Each layer's share of the budget in percent (renormalised over the layers asked for); integers keep the split exact. */
  shares: Readonly<Record<Layer, number>>;
}

export const ROLE_PROFILES: Readonly<Record<Role, RoleProfile>> = {
  executive: {
    kinds: ['decision', 'objective', 'evidence', 'policy', 'approver'],
    figures: ['status', '#number'],
    maxFigures: 6,
    summarySentences: 3,
    shares: { executive: 50, detailed: 35, raw: 15 },
  },
  analyst: {
    kinds: ['evidence', 'decision', 'objective', 'policy', 'approver'],
    figures: ['#number', 'status'],
    maxFigures: 12,
    summarySentences: 5,
    shares: { executive: 20, detailed: 50, raw: 30 },
  },
  operator: {
    kinds: ['decision', 'policy', 'approver', 'evidence', 'objective'],
    figures: ['status', 'gate', 'nextAction', 'moduleHash', '#number'],
    maxFigures: 10,
    summarySentences: 3,
    shares: { executive: 15, detailed: 35, raw: 50 },
  },
};
