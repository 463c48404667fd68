import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { AuditDraft } from '../../core/audit-log.ts';
import { GatehouseError } from '../../core/errors.ts';
import { routeDenial } from '../../core/route-access.ts';
import { ListenError } from '../http/listen-error.ts';
import { asGatehouseError, problemReply } from '../http/problem.ts';
import type { Reply } from '../http/reply.ts';
import { throttledRefusal } from '../http/throttled-refusal.ts';
import type { Services } from '../services.ts';
import type { Tracing } from '../tracing.ts';
import { admit } from './admission.ts';
import { proxiedAuditDraft } from './audit-entry.ts';
import { answerClientError } from './client-error.ts';
import { newExchange, type ProxyExchange } from './exchange.ts';
import { prepareUpstreamHeaders } from './headers.ts';
import { HeldRequestSending, holdRequest } from './held-requests.ts';
import { matchRoute } from './route-match.ts';
import type { RoutesSource } from './routes-config.ts';
import { Upstreams } from './upstreams.ts';
import { handleUpgrade, type UpgradeOutcome } from './websocket.ts';
import { log } from '../../core/log.ts';

/**
 * The proxy gateway: a node:http listener in front of the upstream services named in the routes
 * file, built on the same services as the /v1 API (keys, rate limiter, policies, audit log,
 * decision workflow). Per request:
 *
 *   match route → authenticate → verify signature → rate limit → route policy →
 *     forward (streamed) | deny (403) | hold (202, a governed decision)  → audit
 *
 * Bodies are streamed unless a signature covers their digest (proxy/gateway/signature.ts).
 *
 * The audit entry of a forwarded or refused request is appended once the exchange is over (it
 * records the upstream's status and latency) and is not awaited by the client: the gateway adds
 * no commit to the request's latency. A held request is different: the 202 is sent only once the
 * request, its decision and its audit entry are committed together.
 *
 * With tracing on, each request is a server span and each exchange with the upstream (each try,
 * each upgrade, each held request's send) a client span under it (proxy/tracing.ts).
 */
export interface GatewayConfig {
  services: Services;
  routes: RoutesSource;
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Sockets per upstream origin. */
  maxSocketsPerUpstream?: number;
  /** How long `close` lets exchanges in flight finish before cutting their connections. */
  drainTimeoutMs?: number;
  /** Traces requests and upstream exchanges when set. */
  tracing?: Tracing | null;
}

export interface RunningGateway {
  host: string;
  port: number;
  url: string;
  routes: RoutesSource;
  /** Stops accepting, lets exchanges and held sends in flight finish, closes upstream connections. */
  close(): Promise<void>;
}

export const GATEWAY_DEFAULTS = { port: 8081, maxSocketsPerUpstream: 256, drainTimeoutMs: 10_000 };

export async function startGateway(config: GatewayConfig): Promise<RunningGateway> {
  const { services, routes } = config;
  const tracing = config.tracing ?? null;
  const upstreams = new Upstreams({ maxSockets: config.maxSocketsPerUpstream ?? GATEWAY_DEFAULTS.maxSocketsPerUpstream });
  services.heldRequests.setSender(new HeldRequestSending(upstreams, services.limits.bodyBytes, tracing));
  const interrupted = await services.heldRequests.failInterrupted(services.alive);
  if (interrupted) log.warn({ interrupted }, 'held requests were interrupted mid-send by the last stop and are marked failed');

  const audit = (draft: AuditDraft) => {
    void services.store.commit(() => services.audit.appendInTransaction(draft)).catch((error) => {
      log.error({ requestId: draft.requestId, err: error }, 'could not record the proxied request');
    });
  };
  /** Counts a request once its outcome is known, and ends its span. */
  const finish = (ex: ProxyExchange, outcome: string, status: number) => {
    const route = ex.route?.name ?? 'unmatched';
    services.metrics.proxied.inc({ route, method: ex.method, outcome, status: String(status) });
    ex.span?.end(`proxy:${route}`, status);
  };

  const refusal = (ex: ProxyExchange, error: unknown): { reply: Reply; code: string } => {
    const refused = asGatehouseError(error);
    if (refused.code === 'internal' && !(error instanceof GatehouseError)) log.error({ requestId: ex.requestId, err: error }, 'the proxied request failed');
    return { reply: problemReply(refused, ex.requestId), code: refused.code };
  };

  const answer = (res: ServerResponse, ex: ProxyExchange, reply: Reply, close = false) => {
    if (res.headersSent || res.destroyed) return;
    res.writeHead(reply.status, { ...ex.responseHeaders, ...reply.headers, 'request-id': ex.requestId, ...(close ? { connection: 'close' } : {}) });
    res.end(reply.body);
  };

  const refuse = (res: ServerResponse, ex: ProxyExchange, error: unknown) => {
    const { reply, code } = refusal(ex, error);
    const close = code === 'payload_too_large';
    const throttled = throttledRefusal(services, ex.principal, reply.status, () => ex.clientAddress ?? 'unknown', ex.responseHeaders);
    if (throttled) {
      answer(res, ex, refusal(ex, throttled).reply, close);
      finish(ex, 'denied', 429);
      return;
    }
    answer(res, ex, reply, close);
    finish(ex, 'denied', reply.status);
    audit(proxiedAuditDraft(ex, ex.route?.name ?? 'unmatched', { status: reply.status, code }, { outcome: 'denied', upstreamStatus: null, upstreamLatencyMs: null }));
  };

  const forward = async (req: IncomingMessage, res: ServerResponse, ex: ProxyExchange) => {
    const route = ex.route!;
    const result = await upstreams.forward(req, res, route, ex.body ?? (ex.hasBody ? 'streamed' : 'none'), ex.span);
    let status = result.upstreamStatus ?? 0;
    let code: string | null = null;
    if (result.failure && result.upstreamStatus === null) {
      const detail = result.failure === 'upstream_timeout' ? `the upstream did not answer within ${route.timeoutMs} ms` : 'the upstream could not be reached';
      const { reply } = refusal(ex, new GatehouseError(result.failure, detail, { route: route.name, attempts: result.attempts }));
      answer(res, ex, reply);
      status = reply.status;
      code = result.failure;
    } else if (result.failure) {
      code = result.failure;
    }
    if (result.latencyMs !== null) services.metrics.upstreamLatency.observe({ route: route.name, status: String(result.upstreamStatus) }, result.latencyMs / 1000);
    const outcome = result.failure ? 'failed' : 'forwarded';
    finish(ex, outcome, status);
    audit(proxiedAuditDraft(ex, route.name, { status, code: code ?? (result.clientGone ? 'client_closed' : null) }, {
      outcome,
      upstreamStatus: result.upstreamStatus,
      upstreamLatencyMs: result.latencyMs,
    }));
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const ex = newExchange(req, tracing);
    void (async () => {
      try {
        if (!ex.target.startsWith('/')) throw new GatehouseError('invalid_request', 'the request target must be a path (origin form)');
        const route = matchRoute(routes.current(), ex.method, req.headers.host, ex.path);
        if (!route) throw new GatehouseError('not_found', `no proxy route for ${ex.method} ${ex.path}`);
        const outcome = await admit(services, ex, route, req);
        if (outcome === 'deny') throw routeDenial(ex.check!, ex.facts!);
        ex.traceparent = prepareUpstreamHeaders(req.headers, {
          clientAddress: ex.clientAddress,
          authorizationIsOurs: route.auth !== 'none',
          hasBody: ex.hasBody,
          traceparent: ex.span?.traceparent ?? null,
        });
        if (outcome === 'forward') {
          await forward(req, res, ex);
          return;
        }
        const { reply } = await holdRequest(services, ex, req);
        answer(res, ex, reply);
        finish(ex, 'held', reply.status);
      } catch (error) {
        refuse(res, ex, error);
      }
    })();
  };

  const server = createServer({ keepAliveTimeout: 65_000 }, onRequest);
  server.on('clientError', answerClientError);
  // Upgraded connections leave the HTTP server's bookkeeping; close cuts them explicitly.
  const upgraded = new Set<Socket>();
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    void handleUpgrade(
      {
        services,
        routes,
        upstreams,
        tracing,
        refusal,
        record: (ex: ProxyExchange, o: UpgradeOutcome) => {
          finish(ex, o.outcome, o.status);
          audit(proxiedAuditDraft(ex, ex.route?.name ?? 'unmatched', { status: o.status, code: o.code }, {
            outcome: o.outcome,
            upstreamStatus: o.upstreamStatus,
            upstreamLatencyMs: o.latencyMs,
          }));
        },
      },
      req,
      socket,
      head,
    );
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => {
      services.heldRequests.setSender(null);
      upstreams.close();
      routes.close();
      reject(new ListenError('the proxy gateway', config.host, config.port, error.code ?? 'unknown', 'stop it or choose another port (--proxy-port)'));
    };
    server.once('error', failed);
    server.listen(config.port, config.host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      for (const socket of upgraded) socket.destroy();
      routes.close();
      const deadline = setTimeout(() => server.closeAllConnections(), config.drainTimeoutMs ?? GATEWAY_DEFAULTS.drainTimeoutMs);
      await closed;
      clearTimeout(deadline);
      await services.heldRequests.idle();
      services.heldRequests.setSender(null);
      upstreams.close();
    })());
  const host = config.host;
  return { host, port, url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, routes, close };
}
