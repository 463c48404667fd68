import type { IncomingMessage } from 'node:http';
import type { SignatureSummary } from '../../core/audit-log.ts';
import type { PolicyCheck } from '../../core/decision-workflow.ts';
import { requestId } from '../../core/ids.ts';
import { UNSIGNED, type SignatureFacts } from '../../core/policy-input.ts';
import type { Principal } from '../../core/principal.ts';
import type { RouteRequestFacts } from '../../core/route-access.ts';
import type { GatewaySpan, Tracing } from '../tracing.ts';
import type { ProxyRoute } from './routes-config.ts';

/**
 * What one proxied request accumulates on its way through the gateway (proxy/gateway/admission.ts
 * and the steps after it), as RequestContext does for the /v1 API.
 */
export interface ProxyExchange {
  readonly requestId: string;
  readonly startedAt: number;
  readonly method: string;
  /** Path without the query, as received. */
  readonly path: string;
  /** Path and query, as received: what the upstream is asked for. */
  readonly target: string;
  /** The query as received, without `?`: signatures cover it byte for byte. */
  readonly rawQuery: string;
  readonly clientAddress: string | undefined;
  /** The request announces a body (a length other than 0, or a transfer coding). */
  readonly hasBody: boolean;
  route: ProxyRoute | null;
  principal: Principal | null;
  signature: SignatureFacts;
  /** How the signature fared, for the audit entry; null when nobody was authenticated. */
  signatureSummary: SignatureSummary | null;
  /**
   * The body, when the gateway read it (a signature covers its digest, or the request is held);
   * otherwise it is streamed to the upstream unread.
   */
  body: Buffer | null;
  facts: RouteRequestFacts | null;
  check: PolicyCheck | null;
  /** Sent with the gateway's own replies (rate limits, challenges). */
  responseHeaders: Record<string, string>;
  traceparent: string | null;
  /** The request's span while it lasts, when tracing is on (proxy/tracing.ts). */
  readonly span: GatewaySpan | null;
}

/** A request as it arrives; with `tracing`, its span starts now. */
export function newExchange(req: IncomingMessage, tracing: Tracing | null): ProxyExchange {
  const target = req.url ?? '/';
  const q = target.indexOf('?');
  const id = requestId();
  const method = req.method ?? 'GET';
  const path = q === -1 ? target : target.slice(0, q);
  const incoming = req.headers['traceparent'];
  return {
    requestId: id,
    startedAt: performance.now(),
    method,
    path,
    target,
    rawQuery: q === -1 ? '' : target.slice(q + 1),
    clientAddress: req.socket.remoteAddress,
    hasBody: req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0',
    route: null,
    principal: null,
    signature: UNSIGNED,
    signatureSummary: null,
    body: null,
    facts: null,
    check: null,
    responseHeaders: {},
    traceparent: null,
    span: tracing ? tracing.gatewayRequest({ method, path, traceparent: typeof incoming === 'string' ? incoming : undefined, requestId: id }) : null,
  };
}
