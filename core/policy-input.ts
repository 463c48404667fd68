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

export const UNSIGNED: SignatureFacts = { alg: null, covered: [], keyId: null, label: null, verified: false };

/**
 * Members are listed in sorted order, at every level Gatehouse controls, so the input's canonical
 * JSON (its digest) is written natively instead of member by member (core/canonical-json.ts).
 */
export function policyInput(action: DecisionAction, decision: DecisionRecord, principal: Principal, request: RequestFacts) {
  return {
    action,
    decision: {
      approvals: decision.approvals.map((a) => ({ at: a.at, keyId: a.keyId, roles: a.roles })),
      context: decision.context,
      contextValues: contextValues(decision.context),
      createdAt: decision.createdAt,
      createdBy: decision.createdBy,
      id: decision.id,
      inputs: decision.inputs,
      objectives: decision.objectives,
      policy: decision.policy,
      status: decision.status,
      title: decision.title,
    },
    now_ns: Date.now() * 1e6,
    principal: principalInput(principal),
    request,
  };
}

/** The caller as policies see it, members in sorted order (a key's record lists them otherwise). */
export function principalInput(principal: Principal) {
  const { keyId, env, scopes, roles, claims } = principal;
  return claims ? { claims, env, keyId, roles, scopes } : { env, keyId, roles, scopes };
}
