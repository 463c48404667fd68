/**
 * What core needs from a policy engine, and how it reads an answer. The engine (policies/engine)
 * satisfies this interface structurally; core depends on nothing else of it.
 *
 * Every evaluation fails closed: an error, a missing document or a document without `allow:
 * true` denies, and the verdict says why.
 */
export interface PolicyInfo {
  name: string;
  moduleHash: string;
  /** Where the module came from, when the engine knows: its Rego source files, or the OPA bundle it was loaded from. */
  origin?: string;
  sources?: readonly string[];
  /** An OPA bundle's revision, from its manifest. */
  revision?: string;
  /** The Rego text the module was compiled from, by file, when the engine kept it. */
  modules?: ReadonlyArray<{ path: string; text: string }>;
}

export interface PolicyEvaluation {
  policy: string;
  moduleHash: string;
  value: unknown;
  error?: string | Error | null;
  durationNs: number;
}

export interface PolicyEvaluator {
  names(): string[];
  has(name: string): boolean;
  info(name: string): PolicyInfo | undefined;
  /** Policy files left out of what is loaded (not compiling, or not loading), with why: readiness reports them. */
  loadFailures?(): ReadonlyMap<string, string>;
  /**
   * Evaluates policy `name` on an input given as its JSON text: the text its digest is taken of,
   * so the policy evaluates exactly what the audit entry describes, serialised once.
   */
  evaluateJson(name: string, inputJson: string): PolicyEvaluation;
  /**
   * Tells `listener` whether each reload (of an engine that reloads) succeeded, until the
   * returned function is called (the engine may outlive the server listening).
   */
  onReload?(listener: (outcome: { ok: boolean }) => void): () => void;
}

export interface Verdict {
  allow: boolean;
  gate: string;
  nextAction: string;
  reasons: string[];
  approvals: { roles: string[]; count: number };
  requireSignature: boolean;
  /** Set when the policy could not give an answer (and so denied). */
  error: string | null;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** The verdict of a policy that could not answer. A module function, not a closure per call (see judged in signatures/caller-signature.ts). */
function denied(error: string): Verdict {
  return {
    allow: false,
    gate: 'denied',
    nextAction: 'none',
    reasons: [error],
    approvals: { roles: [], count: 0 },
    requireSignature: false,
    error,
  };
}

/** Reads the package document a decision policy returns into a verdict, failing closed. */
export function readVerdict(evaluation: PolicyEvaluation): Verdict {
  if (evaluation.error) {
    const message = evaluation.error instanceof Error ? evaluation.error.message : String(evaluation.error);
    return denied(`policy ${evaluation.policy} failed: ${message}`);
  }
  const doc = evaluation.value;
  if (doc === undefined || doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    return denied(`policy ${evaluation.policy} returned no decision document`);
  }
  const d = doc as Record<string, unknown>;
  const approvals = (d.approvals && typeof d.approvals === 'object' ? d.approvals : {}) as Record<string, unknown>;
  const count = typeof approvals.count === 'number' && Number.isFinite(approvals.count) ? Math.max(0, Math.floor(approvals.count)) : 0;
  return {
    allow: d.allow === true,
    gate: typeof d.gate === 'string' ? d.gate : 'auto',
    nextAction: typeof d.nextAction === 'string' ? d.nextAction : 'none',
    reasons: strings(d.reasons),
    approvals: { roles: strings(approvals.roles), count },
    requireSignature: d.requireSignature === true,
    error: null,
  };
}
