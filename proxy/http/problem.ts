import { GatehouseError, type ErrorCode } from '../../core/errors.ts';
import type { Reply } from './reply.ts';

/**
 * RFC 9457 problem documents. Every refusal the API makes goes through here, so each error code
 * has exactly one status and title. `type` names the code as a URN documented in docs/api.md.
 */
const PROBLEMS: Record<ErrorCode, { status: number; title: string }> = {
  invalid_request: { status: 400, title: 'Invalid request' },
  unauthenticated: { status: 401, title: 'Unauthenticated' },
  forbidden: { status: 403, title: 'Forbidden' },
  insufficient_scope: { status: 403, title: 'Insufficient scope' },
  policy_denied: { status: 403, title: 'Denied by policy' },
  signature_invalid: { status: 401, title: 'Invalid signature' },
  signature_required: { status: 401, title: 'Signature required' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  conflict: { status: 409, title: 'Conflict' },
  invalid_transition: { status: 409, title: 'Invalid transition' },
  idempotency_in_flight: { status: 409, title: 'Idempotent request in flight' },
  idempotency_mismatch: { status: 422, title: 'Idempotency key reused with a different request' },
  unknown_policy: { status: 422, title: 'Unknown policy' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  rate_limited: { status: 429, title: 'Rate limited' },
  not_ready: { status: 503, title: 'Not ready' },
  upstream_unavailable: { status: 502, title: 'Upstream unavailable' },
  upstream_timeout: { status: 504, title: 'Upstream timed out' },
  not_implemented: { status: 501, title: 'Not implemented' },
  request_header_fields_too_large: { status: 431, title: 'Request header fields too large' },
  request_timeout: { status: 408, title: 'Request timeout' },
  internal: { status: 500, title: 'Internal error' },
};

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export function problemReply(error: GatehouseError, requestId: string): Reply {
  const { status, title } = PROBLEMS[error.code];
  // The defined members come last so no extension can replace them (`status` stays the HTTP status).
  const body = {
    ...error.extensions,
    type: `urn:gatehouse:problem:${error.code}`,
    title,
    status,
    detail: error.message,
    code: error.code,
    requestId,
  };
  return { status, headers: { 'content-type': PROBLEM_CONTENT_TYPE }, body: JSON.stringify(body) };
}

/** Anything thrown that is not a GatehouseError is a bug: report it as `internal`, hide details. */
export function asGatehouseError(error: unknown): GatehouseError {
  if (error instanceof GatehouseError) return error;
  return new GatehouseError('internal', 'the server could not complete this request');
}
