import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { GatehouseError } from '../../core/errors.ts';
import { routeDenial } from '../../core/route-access.ts';
import type { Reply } from '../http/reply.ts';
import type { Services } from '../services.ts';
import type { Tracing } from '../tracing.ts';
import { admit } from './admission.ts';
import { newExchange, type ProxyExchange } from './exchange.ts';
import { prepareUpstreamHeaders } from './headers.ts';
import { matchRoute } from './route-match.ts';
import type { RoutesSource } from './routes-config.ts';
import { upstreamPath, type Upstreams } from './upstreams.ts';

/**
 * WebSocket upgrades, under the same routes and the same checks as plain requests (signatures
 * included: an upgrade has no body, so its signature covers the method and target). An allowed
 * upgrade is handed to the upstream on its own connection (http-proxy `ws`); anything else is
 * answered with an HTTP error on the raw socket, which is then closed. An upgrade cannot be held
 * for approval (there would be nobody to hand the connection to later), so a gated one is refused.
 */
export type UpgradeOutcome = { status: number; code: string | null; outcome: 'forwarded' | 'denied' | 'failed'; upstreamStatus: number | null; latencyMs: number | null };

export interface UpgradeDeps {
  services: Services;
  routes: RoutesSource;
  upstreams: Upstreams;
  tracing: Tracing | null;
  /** Audits and counts the upgrade once its outcome is known. */
  record(ex: ProxyExchange, outcome: UpgradeOutcome): void;
  /** Turns a refusal into a problem reply (and logs what is a bug). */
  refusal(ex: ProxyExchange, error: unknown): { reply: Reply; code: string };
}

export async function handleUpgrade(deps: UpgradeDeps, req: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
  const ex = newExchange(req, deps.tracing);
  socket.on('error', () => socket.destroy());
  try {
    const route = matchRoute(deps.routes.current(), ex.method, req.headers.host, ex.path);
    if (!route) throw new GatehouseError('not_found', `no proxy route for ${ex.method} ${ex.path}`);
    const outcome = await admit(deps.services, ex, route, req);
    if (outcome === 'deny') throw routeDenial(ex.check!, ex.facts!);
    if (outcome === 'hold') {
      const why = 'a WebSocket upgrade cannot be held for approval';
      throw new GatehouseError('policy_denied', why, { reasons: [...ex.check!.verdict.reasons, why], policy: ex.check!.policy });
    }
    const upgradeTo = req.headers['upgrade'] ?? 'websocket';
    ex.traceparent = prepareUpstreamHeaders(req.headers, { clientAddress: ex.clientAddress, authorizationIsOurs: route.auth !== 'none', hasBody: false, traceparent: ex.span?.traceparent ?? null });
    const call = ex.span?.upstream({ method: ex.method, origin: route.upstream, path: upstreamPath(route.upstream, ex.target) }) ?? null;
    if (call) req.headers['traceparent'] = call.traceparent;
    req.headers['connection'] = 'upgrade';
    req.headers['upgrade'] = upgradeTo;
    const started = performance.now();
    let answered = false;
    deps.upstreams.upgrade(
      req,
      socket,
      head,
      route,
      (status) => {
        answered = true;
        call?.answered(status);
        call?.end();
        deps.record(ex, { status, code: null, outcome: 'forwarded', upstreamStatus: status, latencyMs: performance.now() - started });
      },
      () => {
        if (answered) {
          socket.destroy();
          return;
        }
        answered = true;
        call?.end('upstream_unavailable');
        const { reply, code } = deps.refusal(ex, new GatehouseError('upstream_unavailable', 'the upstream could not be reached'));
        refuse(socket, reply, ex.responseHeaders);
        deps.record(ex, { status: reply.status, code, outcome: 'failed', upstreamStatus: null, latencyMs: null });
      },
    );
  } catch (error) {
    const { reply, code } = deps.refusal(ex, error);
    refuse(socket, reply, ex.responseHeaders);
    deps.record(ex, { status: reply.status, code, outcome: 'denied', upstreamStatus: null, latencyMs: null });
  }
}

/** Writes an HTTP error response on a socket that asked to upgrade, then closes it. */
function refuse(socket: Socket, reply: Reply, extra: Record<string, string>): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const headers = { ...extra, ...reply.headers, 'content-length': String(Buffer.byteLength(reply.body)), connection: 'close' };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
  socket.end(`HTTP/1.1 ${reply.status} ${STATUS_CODES[reply.status] ?? 'Error'}\r\n${lines.join('\r\n')}\r\n\r\n${reply.body}`);
}
