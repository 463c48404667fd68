/**
 * Domain failures, named by a stable code. Core never speaks HTTP: the transport maps each code
 * to a status line (proxy/http/problem.ts), so the same rule reads the same from the CLI.
 */
export type ErrorCode =
  | 'invalid_request'
  | 'unauthenticated'
  | 'forbidden'
  | 'insufficient_scope'
  | 'policy_denied'
  | 'signature_invalid'
  | 'signature_required'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'invalid_transition'
  | 'idempotency_mismatch'
  | 'idempotency_in_flight'
  | 'unknown_policy'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'not_ready'
  | 'upstream_unavailable'
  | 'upstream_timeout'
  | 'not_implemented'
  | 'request_header_fields_too_large'
  | 'request_timeout'
  | 'internal';

/**
 * Extra members carried into the problem document (reasons, audit reference, …). The members
 * RFC 9457 and the API define are the transport's to fill: a decision's status, say, goes under
 * `decisionStatus`, never `status`, which is the HTTP status.
 */
export type ProblemExtensions = Record<string, unknown> & {
  [member in 'type' | 'title' | 'status' | 'detail' | 'instance' | 'code' | 'requestId']?: never;
};

export class GatehouseError extends Error {
  readonly code: ErrorCode;
  readonly extensions: ProblemExtensions;

  constructor(code: ErrorCode, detail: string, extensions: ProblemExtensions = {}) {
    super(detail);
    this.name = 'GatehouseError';
    this.code = code;
    this.extensions = extensions;
  }
}
