import type { IncomingMessage } from 'node:http';
import type { AuditDraft } from '../../core/audit-log.ts';
import { decisionView, type DecisionRecord } from '../../core/decision.ts';
import type { HeldOutcome, HeldRequest, HeldRequestSender } from '../../core/held-requests.ts';
import { requestId } from '../../core/ids.ts';
import { json, type Reply } from '../http/reply.ts';
import type { Services } from '../services.ts';
import type { Tracing } from '../tracing.ts';
import { proxiedAuditDraft } from './audit-entry.ts';
import { sendBuffered } from './buffered-exchange.ts';
import type { ProxyExchange } from './exchange.ts';
import { heldHeaders } from './headers.ts';
import { readBody } from './request-body.ts';
import { upstreamPath, type Upstreams } from './upstreams.ts';

/**
 * The transport half of held requests (the rules are core/held-requests.ts). Holding reads the
 * body (proxy/gateway/request-body.ts, bounded by the API's body limit) and stores the request,
 * its decision and the audit entry in one transaction before answering 202 with
 * `Location: /v1/decisions/{id}`. Sending happens once the decision is executed; the response
 * (status, headers and up to `responseLimit` bytes of body) is stored for
 * `GET /v1/decisions/{id}/result`.
 */

/**
 * Stores the request as held and answers 202. Call after the upstream headers were prepared
 * (hop-by-hop and credentials stripped), so what is stored is what will be sent.
 */
export async function holdRequest(services: Services, ex: ProxyExchange, req: IncomingMessage): Promise<{ reply: Reply; decision: DecisionRecord }> {
  const body = await readBody(ex, req, services.limits.bodyBytes, 'a request held for approval is stored');
  const { held, decision } = services.heldRequests.hold(ex.principal, ex.facts!, {
    target: ex.target,
    headers: heldHeaders(req.headers),
    body,
    timeoutMs: ex.route!.timeoutMs,
  }, ex.check!);
  const location = `/v1/decisions/${decision.id}`;
  const reply = json(202, { ...decisionView(decision), result: `${location}/result` }, { location });
  const audit = proxiedAuditDraft(
    ex,
    ex.route!.name,
    { status: reply.status, code: null },
    { outcome: 'held', upstreamStatus: null, upstreamLatencyMs: null },
    decision,
  );
  await services.store.commit(() => {
    services.workflow.write(decision);
    services.heldRequests.write(held);
    services.audit.appendInTransaction(audit);
  });
  return { reply, decision };
}

/**
 * Sends executed held requests for core/held-requests.ts, over the routes' keep-alive agents.
 * With `tracing`, a send is a client span in the trace the request was held in: a child of the
 * `traceparent` it kept, which is the holding request's span when that was traced too.
 */
export class HeldRequestSending implements HeldRequestSender {
  constructor(
    private readonly upstreams: Upstreams,
    private readonly responseLimit: number,
    private readonly tracing: Tracing | null,
  ) {}

  async send(held: HeldRequest): Promise<{ outcome: HeldOutcome; audit: AuditDraft }> {
    const upstream = new URL(held.facts.route.upstream);
    const request = {
      origin: upstream,
      method: held.facts.method,
      path: upstreamPath(upstream, held.forward.target),
      headers: held.forward.headers,
      body: held.forward.body,
      timeoutMs: held.forward.timeoutMs,
    };
    const span = this.tracing?.upstreamCall(held.forward.headers['traceparent'], { ...request, attributes: { 'gatehouse.decision_id': held.decisionId } }) ?? null;
    const outcome = await sendBuffered(this.upstreams, request, this.responseLimit, span);
    const upstreamStatus = outcome.kind === 'response' ? outcome.response.status : null;
    const audit = proxiedAuditDraft(
      {
        requestId: requestId(),
        method: held.facts.method,
        path: held.facts.path,
        principal: held.requester,
        check: null,
        traceparent: held.forward.headers['traceparent'] ?? null,
        // Gatehouse sends it, unsigned; how the requester signed is on the hold's entry.
        signatureSummary: null,
      },
      held.facts.route.name,
      { status: upstreamStatus ?? (outcome.kind === 'failure' && outcome.code === 'upstream_timeout' ? 504 : 502), code: outcome.kind === 'failure' ? outcome.code : null },
      { outcome: outcome.kind === 'response' ? 'sent' : 'failed', upstreamStatus, upstreamLatencyMs: outcome.kind === 'response' ? outcome.response.latencyMs : null },
      { id: held.decisionId, auditTrail: held.auditTrail },
    );
    return { outcome, audit };
  }
}
