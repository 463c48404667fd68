/**
 * Problem documents from the API as typed errors. Every refusal carries the RFC 9457 members;
 * the class says which family it belongs to so callers can `instanceof` instead of comparing
 * codes, and `code` stays available for the rest.
 */
export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  requestId: string;
  [extension: string]: unknown;
}

export class GatehouseApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly requestId: string;
  readonly problem: ProblemDocument;

  constructor(problem: ProblemDocument) {
    super(`${problem.status} ${problem.code}: ${problem.detail}`);
    this.name = new.target.name;
    this.status = problem.status;
    this.code = problem.code;
    this.requestId = problem.requestId;
    this.problem = problem;
  }

  /**
   * The status of the decision a refusal concerns (`invalid_transition`, or `blocked` on a
   * `policy_denied` that blocked it); `status` is the HTTP status.
   */
  get decisionStatus(): string | undefined {
    return this.problem.decisionStatus as string | undefined;
  }
}

/** 400, 413, 415: the request itself is wrong. */
export class InvalidRequestError extends GatehouseApiError {}
/** 401: missing, unknown, revoked or unreviewed key. */
export class AuthenticationError extends GatehouseApiError {}
/**
 * 401 `signature_required` or `signature_invalid` (RFC 9421): `check` names the failed check of an
 * invalid signature (`digest`, `created`, `expired`, `replay`, `unknown_key`, `bad_signature`,
 * `missing_component`, `malformed`).
 */
export class SignatureError extends AuthenticationError {
  get check(): string | undefined {
    return this.problem.check as string | undefined;
  }
}
/** 403 `forbidden` or `insufficient_scope`. */
export class PermissionError extends GatehouseApiError {}
/** 403 `policy_denied`: `reasons` say why; `auditTrail` points at the record of it. */
export class PolicyDeniedError extends GatehouseApiError {
  get reasons(): string[] {
    return (this.problem.reasons as string[] | undefined) ?? [];
  }
  get auditTrail(): string | undefined {
    return this.problem.auditTrail as string | undefined;
  }
}
/** 404. */
export class NotFoundError extends GatehouseApiError {}
/** 409 `invalid_transition` or `conflict`. */
export class ConflictError extends GatehouseApiError {}
/** 409 `idempotency_in_flight` and 422 `idempotency_mismatch`. */
export class IdempotencyError extends GatehouseApiError {}
/** 422 `unknown_policy`. */
export class UnknownPolicyError extends GatehouseApiError {}
/** 429: `retryAfterSeconds` from the Retry-After header. */
export class RateLimitedError extends GatehouseApiError {
  constructor(
    problem: ProblemDocument,
    readonly retryAfterSeconds: number,
  ) {
    super(problem);
  }
}
/** 5xx. */
export class ServerError extends GatehouseApiError {}

export function errorFor(problem: ProblemDocument, retryAfterSeconds: number): GatehouseApiError {
  switch (problem.code) {
    case 'policy_denied':
      return new PolicyDeniedError(problem);
    case 'forbidden':
    case 'insufficient_scope':
      return new PermissionError(problem);
    case 'unauthenticated':
      return new AuthenticationError(problem);
    case 'signature_invalid':
    case 'signature_required':
      return new SignatureError(problem);
    case 'not_found':
      return new NotFoundError(problem);
    case 'invalid_transition':
    case 'conflict':
      return new ConflictError(problem);
    case 'idempotency_in_flight':
    case 'idempotency_mismatch':
      return new IdempotencyError(problem);
    case 'unknown_policy':
      return new UnknownPolicyError(problem);
    case 'rate_limited':
      return new RateLimitedError(problem, retryAfterSeconds);
  }
  if (problem.status >= 500) return new ServerError(problem);
  return new InvalidRequestError(problem);
}
