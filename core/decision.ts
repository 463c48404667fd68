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

/** The labels a context array carries, as the flat map policies read (`"ns:name": value`). */
export function contextValues(context: DecisionRecord['context']): Record<string, number> {
  const values: Record<string, number> = {};
  if (!Array.isArray(context)) return values;
  // Inserted in sorted order, so the policy input's canonical JSON is written natively
  // (core/canonical-json.ts); the sort is stable, so a repeated source still keeps its last value.
  const bySource = context.length > 1 ? [...context].sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : 0)) : context;
  for (const entry of bySource) values[entry.source] = entry.value;
  return values;
}

/** The decision as the API returns it (the env is implied by the key that asks). */
export function decisionView(record: DecisionRecord): Omit<DecisionRecord, 'env'> {
  const { env: _env, ...view } = record;
  // Decisions stored before revisions were counted have none: they are at revision 0.
  if (view.revision === undefined) view.revision = 0;
  return view;
}
