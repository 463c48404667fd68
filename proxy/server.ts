import uWS, { type HttpRequest, type HttpResponse, type TemplatedApp, type us_listen_socket } from 'uWebSockets.js';
import { operationDraft } from '../core/audit-log.ts';
import type { Env } from '../core/env.ts';
import { requestId } from '../core/ids.ts';
import type { PolicyEvaluator } from '../core/policy-evaluator.ts';
import { UNSIGNED } from '../core/policy-input.ts';
import { DEFAULT_RATE_LIMITS, type RateLimit } from '../core/rate-limiter.ts';
import { Store } from '../core/store.ts';
import type { RequestContext } from './context.ts';
import { readBody } from './http/request-body.ts';
import { statusLine, type Reply } from './http/reply.ts';
import { runPipeline } from './pipeline.ts';
import { paramNames, ROUTES, uwsPattern } from './route-table.ts';
import type { RouteDef } from './route.ts';
import { buildServices, type Services } from './services.ts';

/**
 * The /v1 API on uWebSockets.js. Handlers follow the uWS examples: read what is needed from the
 * request synchronously (it is only valid during the callback), register `onAborted` before any
 * asynchronous step, and write the reply inside `cork`.
 *
 * Routing is uWS's: one `any` handler per path pattern picks the route by method (so a known path
 * with the wrong method is 405 with `Allow`), and a catch-all answers 404.
 */
export interface ServerConfig {
  dataDir: string;
  policies: PolicyEvaluator;
  host?: string;
  /** 0 picks a free port; the bound one is in the result. */
  port?: number;
  /** The bootstrap admin key's secret. Without one, the first start generates it. */
  adminKey?: string;
  bodyLimitBytes?: number;
  idempotencyRetentionMs?: number;
  rateLimits?: Partial<Record<Env, RateLimit>>;
  durability?: 'commit' | 'flush';
  /** How long `close` waits for in-flight requests before closing connections anyway. */
  drainTimeoutMs?: number;
}

export const DEFAULTS = {
  host: '127.0.0.1',
  port: 8080,
  bodyLimitBytes: 1024 * 1024,
  idempotencyRetentionMs: 24 * 60 * 60 * 1000,
  drainTimeoutMs: 10_000,
};

export interface RunningServer {
  host: string;
  port: number;
  url: string;
  /** The bootstrap admin key's id, and its secret when this start generated it. */
  adminKey: { id: string; generated: string | null };
  services: Services;
  /** Stops accepting, drains in-flight requests, closes connections and the store. */
  close(): Promise<void>;
}

export async function startServer(config: ServerConfig): Promise<RunningServer> {
  const host = config.host ?? DEFAULTS.host;
  const store = Store.open({ dataDir: config.dataDir, durability: config.durability ?? 'commit' });
  let draining = false;
  let inFlight = 0;
  const services = buildServices({
    store,
    evaluator: config.policies,
    bodyLimitBytes: config.bodyLimitBytes ?? DEFAULTS.bodyLimitBytes,
    idempotencyRetentionMs: config.idempotencyRetentionMs ?? DEFAULTS.idempotencyRetentionMs,
    rateLimits: { ...DEFAULT_RATE_LIMITS, ...config.rateLimits },
    draining: () => draining,
  });
  const adminKey = await services.keys.ensureBootstrapAdmin(store, config.adminKey, (record) =>
    services.audit.appendInTransaction(operationDraft('SYSTEM', 'bootstrap admin key', record.id, 0)),
  );

  const app = uWS.App();
  const send = (res: HttpResponse, ctx: RequestContext, reply: Reply) => {
    inFlight--;
    const status = String(reply.status);
    services.metrics.requests.inc({ method: ctx.method, route: ctx.routeLabel, status });
    services.metrics.latency.observe({ method: ctx.method, route: ctx.routeLabel, status }, (performance.now() - ctx.startedAt) / 1000);
    if (res.aborted) return;
    res.cork(() => {
      res.writeStatus(statusLine(reply.status));
      for (const name in reply.headers) res.writeHeader(name, reply.headers[name]!);
      res.writeHeader('request-id', ctx.requestId);
      res.end(reply.body, ctx.closeConnection || draining);
    });
  };

  const handler = (routes: Map<string, RouteDef>, pattern: string) => {
    const allowed = [...routes.keys()];
    const params = paramNames(routes.values().next().value?.path ?? '');
    return (res: HttpResponse, req: HttpRequest) => {
      const method = req.getCaseSensitiveMethod().toUpperCase();
      const route = routes.get(method);
      const headers: Record<string, string> = {};
      req.forEach((name, value) => {
        headers[name] = value;
      });
      const values: Record<string, string> = {};
      params.forEach((name, i) => (values[name] = decodeURIComponent(req.getParameter(i) ?? '')));
      const ctx = newContext(services, {
        method,
        path: req.getUrl(),
        query: new URLSearchParams(req.getQuery() ?? ''),
        headers,
        params: values,
        route,
        routeLabel: route ? route.path : pattern,
        allowed: route ? [] : allowed,
        lateForShutdown: draining,
      });
      inFlight++;
      // uWS responses accept user data; `aborted` marks one that must no longer be written.
      res.aborted = false;
      let started = false;
      res.onAborted(() => {
        res.aborted = true;
        // A client gone before its body arrived never reaches the pipeline: nothing to drain.
        if (!started) inFlight--;
      });
      const run = () => {
        started = true;
        void runPipeline(ctx).then((reply) => send(res, ctx, reply));
      };
      const length = headers['content-length'];
      if ((length !== undefined && length !== '0') || headers['transfer-encoding'] !== undefined) {
        const declared = length === undefined ? null : Number(length);
        readBody(res, services.limits.bodyBytes, declared, (result) => {
          if (result.ok) ctx.rawBody = result.body;
          else ctx.bodyTooLarge = true;
          run();
        });
      } else {
        run();
      }
    };
  };

  const byPattern = new Map<string, Map<string, RouteDef>>();
  for (const route of ROUTES) {
    const pattern = uwsPattern(route.path);
    if (!byPattern.has(pattern)) byPattern.set(pattern, new Map());
    byPattern.get(pattern)!.set(route.method, route);
  }
  for (const [pattern, routes] of byPattern) app.any(pattern, handler(routes, pattern));
  app.any('/*', handler(new Map(), 'unmatched'));

  const listenSocket = await listen(app, host, config.port ?? DEFAULTS.port);
  const port = uWS.us_socket_local_port(listenSocket as unknown as uWS.us_socket);
  const purge = setInterval(() => void services.idempotency.purgeExpired(store).catch(() => {}), 60_000);
  purge.unref();

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      draining = true;
      uWS.us_listen_socket_close(listenSocket);
      const deadline = Date.now() + (config.drainTimeoutMs ?? DEFAULTS.drainTimeoutMs);
      while (inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      clearInterval(purge);
      (app as TemplatedApp & { close(): void }).close();
      await store.close();
    })());

  return { host, port, url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, adminKey, services, close };
}

function listen(app: TemplatedApp, host: string, port: number): Promise<us_listen_socket> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => (socket ? resolve(socket) : reject(new Error(`cannot listen on ${host}:${port}`))));
  });
}

function newContext(
  services: Services,
  head: Pick<RequestContext, 'method' | 'path' | 'query' | 'headers' | 'params' | 'route' | 'routeLabel' | 'allowed' | 'lateForShutdown'>,
): RequestContext {
  return {
    ...head,
    services,
    requestId: requestId(),
    startedAt: performance.now(),
    rawBody: null,
    bodyTooLarge: false,
    body: undefined,
    queryValues: undefined,
    principal: null,
    signature: UNSIGNED,
    idempotency: null,
    replayed: false,
    policyCheck: null,
    decision: null,
    draft: null,
    issuedKey: null,
    writes: [],
    responseHeaders: {},
    errorCode: null,
    closeConnection: false,
  };
}

