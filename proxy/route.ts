import type { TSchema } from '@sinclair/typebox';
import { Problem } from './schemas.ts';
import type { Scope } from '../core/scopes.ts';
import type { RequestContext } from './context.ts';
import type { Reply } from './http/reply.ts';

/** Headers a response may carry besides those every response of its kind does (proxy/openapi.ts). */
export type ResponseHeader = 'Location' | 'Set-Cookie';

export interface RouteResponse {
  description: string;
  schema?: TSchema;
  contentType?: string;
  headers?: readonly ResponseHeader[];
}

/** A documented RFC 9457 problem+json answer. */
export function problemResponse(description: string): RouteResponse {
  return { description, schema: Problem, contentType: 'application/problem+json' };
}

/** The refusals of a route that needs a key with `scope`: no key, not that scope, the rate limit. */
export function keyRefusals(scope: Scope): Record<401 | 403 | 429, RouteResponse> {
  return {
    401: problemResponse('Missing, unknown, revoked or unreviewed API key.'),
    403: problemResponse(`The key lacks ${scope}.`),
    429: problemResponse('Rate limited.'),
  };
}

/**
 * One API route: what it needs (scope, body and query schemas), what it answers, and the two
 * stages it contributes to the pipeline. The same definition drives routing, validation,
 * authorisation and the OpenAPI document.
 */
export interface RouteDef {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** OpenAPI-style path: `/v1/decisions/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  /** `null` for public routes (no key needed). */
  scope: Scope | null;
  /** The API key named by the path's `{id}` may call this route without `scope`: it manages its own. */
  selfService?: boolean;
  /**
   * A production key with no active signing key may call this route unsigned for itself:
   * registering its first signing key is how a key starts signing (docs/signatures.md).
   */
  signatureBootstrap?: boolean;
  /** Ops probes stay out of the audit log; every /v1 call is recorded. */
  audited: boolean;
  body?: TSchema;
  /**
   * What the body schema cannot say, checked right after it (still validation: a refusal here is
   * never claimed for idempotency); throws a GatehouseError for a body the route refuses.
   */
  checkBody?(body: unknown): void;
  /** An empty body is accepted and read as `{}`. */
  bodyOptional?: boolean;
  query?: TSchema;
  /**
   * Reads memory (or writes what links to it): waits for memory recorded after earlier replies
   * (decisions', core/memory/decision-memory.ts), so a caller reads what its own calls caused.
   */
  readsMemory?: boolean;
  /** Accepts an `Idempotency-Key` header. */
  idempotent?: boolean;
  responses: Record<number, RouteResponse>;
  /** The policy stage: evaluate whatever governs this call and record it on the context. */
  policy?(ctx: RequestContext): void;
  /** The handler stage: compute the reply and queue the writes. */
  handle(ctx: RequestContext): Reply | Promise<Reply>;
}
