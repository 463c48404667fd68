import type { Env } from './env.ts';

/**
 * A governed decision as stored. `status` moves through the transitions in
 * core/decision-transitions.ts; `gate` and `nextAction` are what the governing policy said.
 */
export type DecisionStatus = 'created' | 'approved' | 'rejected' | 'executed' | 'cancelled' | 'blocked';
export type DecisionAction = 'create' | 'approve' | 'reject' | 'execute' | 'cancel';

export interface ContextEntry {
  source: string;
  value: number;
}

export interface Approval {
  keyId: string;
  roles: string[];
  at: string;
  comment: string | null;
}

export interface HistoryEntry {
  action: DecisionAction;
  keyId: string;
  at: string;
  status: DecisionStatus;
  comment: string | null;
}

export interface DecisionRecord {
  id: string;
  env: Env;
  title: string;
  policy: string;
  moduleHash: string;
  context: string | ContextEntry[];
  inputs: string[];
  objectives: string[];
  status: DecisionStatus;
  gate: string;
  nextAction: string;
  reasons: string[];
  /** Approvals the policy asked for when the decision was created. */
  requiredApprovals: { roles: string[]; count: number };
  approvals: Approval[];
  history: HistoryEntry[];
  createdBy: string;
  createdAt: string;
  updatedAt: string;
  auditTrail: string;
  /**
   * Counts the decision's stored versions, 1 when created: a workflow action is refused (409) when
   * another changed the decision after it was read (core/revision.ts).
   */
  revision: number;
  /** What the decision governs beyond itself: a production key under security review, a held proxied request, a held agent tool call. */
  subject: { type: 'key' | 'proxy-request' | 'agent-tool-call'; id: string } | null;
}

/**
 * The first context entry naming a source an earlier one names, or null. A decision names each
 * source once (the API refuses a repeat with 400), so the map policies read holds every value.
 */
export function firstRepeatedSource(context: readonly ContextEntry[]): { source: string; first: number; index: number } | null {
  const seen = new Map<string, number>();
  for (const [index, { source }] of context.entries()) {
    const first = seen.get(source);
    if (first !== undefined) return { source, first, index };
    seen.set(source, index);
  }
  return null;
}

/**
 * The labels a context array carries, as the flat map policies read (`"ns:name": value`). A
 * decision stored before repeats were refused may name a source twice: its values are then listed
 * in order, so the policy still sees every value stored, and a policy that reads the label as one
 * number finds none (the bundled ones then answer their strictest).
 */
export function contextValues(context: DecisionRecord['context']): Record<string, number | number[]> {
  const values: Record<string, number | number[]> = {};
  if (!Array.isArray(context)) return values;
  // Inserted in sorted order, so the policy input's canonical JSON is written natively
  // (core/canonical-json.ts); the sort is stable, so a repeated source's values keep their order.
  const bySource = context.length > 1 ? [...context].sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : 0)) : context;
  for (const { source, value } of bySource) {
    const earlier = values[source];
    values[source] = earlier === undefined ? value : [...(Array.isArray(earlier) ? earlier : [earlier]), value];
  }
  return values;
}

/** The decision as the API returns it (the env is implied by the key that asks). */
export function decisionView(record: DecisionRecord): Omit<DecisionRecord, 'env'> {
  const { env: _env, ...view } = record;
  // Decisions stored before revisions were counted have none: they are at revision 0.
  if (view.revision === undefined) view.revision = 0;
  return view;
}
