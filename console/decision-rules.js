// What the page offers: which actions a decision's state allows (the table in docs/api.md) and
// which of them the signed-in key's scopes allow. The server judges every action again, and its
// policy has the last word; this only keeps buttons that cannot succeed from looking as if they
// could.

export function label(decision) {
  return `${decision.gate}:${decision.nextAction}`;
}

/** A policy's name carries its version: `spend-approval-v2` is version 2 of spend-approval. */
export function policyVersion(name) {
  const match = /-v(\d+)$/.exec(name);
  return match ? Number(match[1]) : null;
}

export function hasScope(me, scope) {
  return me.scopes.includes(scope) || me.scopes.includes('admin');
}

const OPEN = new Set(['created', 'approved', 'blocked']);

const ACTIONS = [
  { action: 'approve', name: 'Approve', scope: 'decisions:approve', allowed: (d) => (d.status === 'created' || d.status === 'blocked') && d.nextAction === 'approve' },
  { action: 'reject', name: 'Reject', scope: 'decisions:approve', allowed: (d) => d.status === 'created' || d.status === 'blocked' },
  // The API would take an execution while approvals are missing, refuse it and block the
  // decision; the page offers it only once the policy says execution is next.
  { action: 'execute', name: 'Execute', scope: 'decisions:execute', allowed: (d) => OPEN.has(d.status) && d.nextAction === 'execute' },
  { action: 'cancel', name: 'Cancel', scope: 'decisions:write', allowed: (d) => OPEN.has(d.status) },
];

/** Each action with whether it is offered and, when not, why. */
export function actions(decision, me) {
  // A security review (its subject is a key) takes the admin scope for every action.
  const review = decision.subject?.type === 'key';
  return ACTIONS.map(({ action, name, scope, allowed }) => {
    const needed = review ? 'admin' : scope;
    if (!hasScope(me, needed)) return { action, name, enabled: false, why: `your key lacks ${needed}` };
    if (!allowed(decision)) return { action, name, enabled: false, why: `not possible while ${decision.status} (next: ${decision.nextAction})` };
    return { action, name, enabled: true, why: null };
  });
}

export function when(iso) {
  if (!iso) return '';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}
