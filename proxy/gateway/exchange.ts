import type { IncomingMessage } from 'node:http';
import type { PolicyCheck } from '../../core/decision-workflow.ts';
import { requestId } from '../../core/ids.ts';
import { UNSIGNED, type SignatureFacts } from '../../core/policy-input.ts';
import type { Principal } from '../../core/principal.ts';
import type { RouteRequestFacts } from '../../core/route-access.ts';
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
  readonly query: URLSearchParams;
  readonly clientAddress: string | undefined;
  route: ProxyRoute | null;
  principal: Principal | null;
  signature: SignatureFacts;
  facts: RouteRequestFacts | null;
  check: PolicyCheck | null;
  /** Sent with the gateway's own replies (rate limits, challenges). */
  responseHeaders: Record<string, string>;
  traceparent: string | null;
}

export function newExchange(req: IncomingMessage): ProxyExchange {
  const target = req.url ?? '/';
  const q = target.indexOf('?');
  return {
    requestId: requestId(),
    startedAt: performance.now(),
    method: req.method ?? 'GET',
    path: q === -1 ? target : target.slice(0, q),
    target,
    query: new URLSearchParams(q === -1 ? '' : target.slice(q + 1)),
    clientAddress: req.socket.remoteAddress,
    route: null,
    principal: null,
    signature: UNSIGNED,
    facts: null,
    check: null,
    responseHeaders: {},
    traceparent: null,
  };
}
