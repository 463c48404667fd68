import { contextValues, type DecisionAction, type DecisionRecord } from './decision.ts';
import type { Principal } from './principal.ts';

/**
 * The input document every decision policy receives. Its shape is the contract with the bundled
 * Rego policies (decision-gate-v1, spend-approval-v1, security-review-v1).
 */
export interface SignatureFacts {
  verified: boolean;
  keyId: string | null;
  alg: string | null;
  label: string | null;
  covered: string[];
}

export interface RequestFacts {
  method: string;
  path: string;
  signature: SignatureFacts;
}

export const UNSIGNED: SignatureFacts = { verified: false, keyId: null, alg: null, label: null, covered: [] };

export function policyInput(action: DecisionAction, decision: DecisionRecord, principal: Principal, request: RequestFacts) {
  const caller: { keyId: string; env: string; scopes: string[]; roles: string[]; claims?: unknown } = {
    keyId: principal.keyId,
    env: principal.env,
    scopes: principal.scopes,
    roles: principal.roles,
  };
  if (principal.claims) caller.claims = principal.claims;
  return {
    action,
    decision: {
      id: decision.id,
      title: decision.title,
      policy: decision.policy,
      status: decision.status,
      context: decision.context,
      contextValues: contextValues(decision.context),
      inputs: decision.inputs,
      objectives: decision.objectives,
      createdBy: decision.createdBy,
      approvals: decision.approvals.map((a) => ({ keyId: a.keyId, roles: a.roles, at: a.at })),
      createdAt: decision.createdAt,
    },
    principal: caller,
    request,
    now_ns: Date.now() * 1e6,
  };
}
