import uWS, { type HttpRequest, type HttpResponse, type ListenOptions, type TemplatedApp, type us_listen_socket } from 'uWebSockets.js';
import { AuditCheckpointSigner, CHECKPOINT_DEFAULTS, type CheckpointSchedule } from '../core/audit-checkpoints.ts';
import { operationDraft } from '../core/audit-log.ts';
import { auditKeyPath, openAuditSigningKey } from '../core/audit-signing-key.ts';
import type { Env } from '../core/env.ts';
import { GatehouseError } from '../core/errors.ts';
import { requestId } from '../core/ids.ts';
import type { PolicyEvaluator } from '../core/policy-evaluator.ts';
import { UNSIGNED } from '../core/policy-input.ts';
import { DEFAULT_RATE_LIMITS, type RateLimit } from '../core/rate-limiter.ts';
import { UNAUTHENTICATED_LIMIT } from '../core/unauthenticated-throttle.ts';
import type { Embedder } from '../core/memory/embedder.ts';
import { WordVectorEmbedder } from '../core/memory/word-vectors.ts';
import { Store } from '../core/store.ts';
import { ClusterJoinError, ClusterLink, type ClusterOptions } from '../core/cluster/cluster-link.ts';
import { ClusterReplayMarks } from '../core/cluster/shared-replay-marks.ts';
import { DEFAULT_SKEW_SECONDS } from '../core/signatures/request-verifier.ts';
import { Replica } from '../core/cluster/replica.ts';
import { PolicyCensus } from '../core/cluster/policy-census.ts';
import type { JwtIdentities } from '../core/jwt-identities.ts';
import type { SignatureMode } from '../core/signatures/requirement.ts';
import type { RequestContext } from './context.ts';
import { bindFailure, ListenError } from './http/listen-error.ts';
import type { ThreadGroup } from '../core/threads/thread-group.ts';
import { DECISIONS_DATABASE } from '../core/decision-store.ts';
import { HELD_DATABASE } from '../core/held-requests.ts';
import { problemReply } from './http/problem.ts';
import { readBody } from './http/request-body.ts';
import { malformedHead } from './http/request-head.ts';
import { statusLine, type Reply } from './http/reply.ts';
import { runPipeline } from './pipeline.ts';
import { Tracing } from './tracing.ts';
import { paramNames, ROUTES, uwsPattern } from './route-table.ts';
import type { RouteDef } from './route.ts';
import { DEFAULT_RETENTION, type RetentionPolicy } from '../core/events/event-log.ts';
import { WEBHOOK_DEFAULTS, type WebhookOptions } from '../core/webhooks/webhooks.ts';
import { STREAM_DEFAULTS, StreamHub, type StreamOptions } from './streaming/stream-hub.ts';
import { STREAM_PATH } from './streaming/stream-route.ts';
import { buildServices, type Services } from './services.ts';
import { GATEWAY_DEFAULTS, startGateway, type RunningGateway } from './gateway/gateway.ts';
import { RoutesSource } from './gateway/routes-config.ts';
import { ToolExecution } from './gateway/tool-execution.ts';
import { Upstreams } from './gateway/upstreams.ts';
import { log } from '../core/log.ts';

/**
 * The /v1 API on uWebSockets.js. Handlers follow the uWS examples: read what is needed from the
 * request synchronously (it is only valid during the callback), register `onAborted` before any
 * asynchronous step, and write the reply inside `cork`.
 *
 * Routing is uWS's: one `any` handler per path pattern picks the route by method (so a known path
 * with the wrong method is 405 with `Allow`), and a catch-all answers 404.
 *
 * No request may end the process: uWS ends it on an exception thrown from a handler, and Node on
 * an unhandled rejection. The pipeline turns every refusal and fault into a reply; whatever still
 * escapes it (a bug) reaches `answerInternal`, which logs it and answers 500 `internal`.
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
  /** Recorded refusals of unauthenticated callers per client address (core/unauthenticated-throttle.ts). */
  unauthenticatedLimit?: RateLimit;
  durability?: 'commit' | 'flush';
  /** How long a commit waits for others to join its transaction, in ms (core/store.ts; default 0, CLUSTER_COMMIT_WINDOW_MS in cluster mode). */
  commitWindowMs?: number;
  /** Cluster mode (docs/cluster.md): the NATS cluster whose commit stream this instance shares. */
  cluster?: ClusterOptions;
  /** The audit checkpoint signing key's file (docs/security.md); `audit-signing-key.pem` in the data directory when unset. */
  auditKeyFile?: string;
  /** How often audit checkpoints are signed (core/audit-checkpoints.ts). */
  auditCheckpoints?: Partial<CheckpointSchedule>;
  /** Embeds memory for semantic search; the offline word-vector model when unset. */
  embedder?: Embedder;
  /** Decision items memory holds per environment, the newest (core/memory/retention.ts DEFAULT_RETAINED_DECISIONS). */
  memoryDecisions?: number;
  /** How long `close` waits for in-flight requests before closing connections anyway. */
  drainTimeoutMs?: number;
  /** The proxy gateway (docs/proxy.md): started when a routes file is named. */
  proxy?: { routesFile: string; host?: string; port?: number };
  /** How long and how many events the event log keeps (docs/streaming.md). */
  eventRetention?: Partial<RetentionPolicy>;
  /** The WebSocket stream's backpressure bound, heartbeat and idle timeout. */
  streaming?: Partial<StreamOptions>;
  /** Webhook retries, timeouts, disabling and the SSRF allowlist (docs/webhooks.md). */
  webhooks?: Partial<WebhookOptions>;
  /** CIDRs, addresses or host names agents' tools may reach despite the SSRF guard (docs/agents.md). */
  toolAllow?: readonly string[];
  /** Who must sign requests (docs/signatures.md); `production` by default. */
  signatures?: SignatureMode;
  /** How far `created` may be from the server's clock, in seconds (default 300). */
  signatureSkewSeconds?: number;
  /** The URL clients reach the server at, when a proxy sits in front: `@target-uri` uses its scheme and authority. */
  publicUrl?: string;
  /** Issuers whose JWTs authenticate as service identities. */
  jwtIdentities?: JwtIdentities | null;
  /**
   * Share the port with other processes listening on it with this option too (SO_REUSEPORT; the
   * kernel spreads connections among them). Without it, a port in use is a ListenError.
   */
  reusePort?: boolean;
  /**
   * `--threads` mode (cli/thread-workers.ts): this server is one of the process's threads, on
   * the same port and LMDB environment as the others. Thread 0 alone runs what is done once per
   * process: webhook deliveries, audit checkpoints, periodic purges, the proxy gateway.
   */
  threads?: ThreadGroup;
}

/**
 * `--threads`: the databases whose writes the other threads log for thread 0 (core/store.ts,
 * `joinThreads`): decisions, which it records into memory, and held requests, which its gateway
 * sends. Nothing thread 0 writes is needed elsewhere.
 */
const THREAD_LOGGED = [DECISIONS_DATABASE, HELD_DATABASE];

/** A request a worker thread hands to thread 0, which holds memory: what its pipeline needs. */
interface HandedRequest {
  method: string;
  path: string;
  rawQuery: string;
  headers: Record<string, string>;
  params: Record<string, string>;
  /** The route's uWS pattern, which with the method names the route on thread 0 too. */
  pattern: string;
  rawBody: Uint8Array | null;
  bodyTooLarge: boolean;
  remoteAddress: string;
  lateForShutdown: boolean;
}

interface HandedAnswer {
  reply: Reply;
  requestId: string;
  close: boolean;
}

/** How long a handed request may take on thread 0 (a memory query or a context synthesis is milliseconds). */
const HANDED_REQUEST_TIMEOUT_MS = 60_000;

export const DEFAULTS = {
  host: '127.0.0.1',
  port: 8080,
  bodyLimitBytes: 1024 * 1024,
  idempotencyRetentionMs: 24 * 60 * 60 * 1000,
  drainTimeoutMs: 10_000,
};

/**
 * The commit window in cluster mode when none is configured. Each commit is one publish to the
 * 3-replica commit stream, and a publish costs the NATS servers 0.65–0.9 ms of CPU together
 * whatever it carries (bare JetStream, 1.5 KB messages, the 2-core development machine);
 * committed as they came, two instances at 1,000 decisions/s published 0.92 times per decision,
 * kept both cores 93% busy and answered with p99 1–6 s and 503s. With 5 ms: 0.48 publishes per
 * decision, NATS CPU per decision about halved, p99 52–268 ms and no errors, for about 5 ms more
 * at p50 at light load (docs/cluster.md, *Commit window*).
 */
export const CLUSTER_COMMIT_WINDOW_MS = 5;

/**
 * How long, after the drain, the requests of interrupted tool calls get to record and send their
 * answers: only commits are left for them, so this bounds a request stuck on something else.
 */
const ANSWER_GRACE_MS = 1000;

export interface RunningServer {
  host: string;
  port: number;
  url: string;
  /** The bootstrap admin key's id, and its secret when this start generated it. */
  adminKey: { id: string; generated: string | null };
  services: Services;
  /** The proxy gateway's listener, when routes are configured. */
  gateway: RunningGateway | null;
  /** Stops accepting, drains in-flight requests, closes connections and the store. */
  close(): Promise<void>;
}

/** Joins the cluster and catches up with it; the store is closed if that fails. */
async function joinCluster(store: Store, options: ClusterOptions): Promise<Replica> {
  let link: ClusterLink | null = null;
  try {
    link = await ClusterLink.connect(options);
    return await Replica.start(store, link);
  } catch (error) {
    await link?.close();
    await store.close();
    throw new ClusterJoinError(`cannot join the cluster at ${options.servers.join(',')}: ${(error as Error).message}`, { cause: error });
  }
}

export async function startServer(config: ServerConfig): Promise<RunningServer> {
  const host = config.host ?? DEFAULTS.host;
  const auditKey = await openAuditSigningKey(auditKeyPath(config.dataDir, config.auditKeyFile));
  if (auditKey.generated) log.info({ path: auditKey.key.path }, 'generated the audit checkpoint signing key');
  const tracing = await Tracing.fromEnv();
  const store = Store.open({
    dataDir: config.dataDir,
    durability: config.durability ?? 'commit',
    commitWindowMs: config.commitWindowMs ?? (config.cluster ? CLUSTER_COMMIT_WINDOW_MS : 0),
    writemap: !config.cluster,
  });
  const threads = config.threads ?? null;
  // Before anything reads the store to build what it holds: it learns the other threads' commits from there on.
  if (threads) store.joinThreads(threads.commits(), threads.index === 0 ? [] : THREAD_LOGGED);
  const once = !threads || threads.index === 0;
  const replica = config.cluster ? await joinCluster(store, config.cluster) : null;
  let census: PolicyCensus | null = null;
  // Until it listens, a start that fails leaves nothing behind: no cluster reader or connection, no open store.
  const orLeave = async <T>(work: () => T | Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      await census?.stop();
      await replica?.stopReading();
      await store.close();
      await replica?.disconnect();
      throw error;
    }
  };
  census = replica ? await orLeave(() => PolicyCensus.start(replica.link, config.policies)) : null;
  // A signature is accepted while its `created` is within the skew of the clock, either side.
  const skewSeconds = config.signatureSkewSeconds ?? DEFAULT_SKEW_SECONDS;
  const replayMarks = replica ? await orLeave(() => ClusterReplayMarks.open(replica.link, (2 * skewSeconds + 2) * 1000)) : null;
  // Narrowed once, for the closures below.
  const joined = census;
  let draining = false;
  let inFlight = 0;
  const embedder = config.embedder ?? new WordVectorEmbedder();
  const services = await orLeave(() => buildServices({
    store,
    evaluator: config.policies,
    bodyLimitBytes: config.bodyLimitBytes ?? DEFAULTS.bodyLimitBytes,
    idempotencyRetentionMs: config.idempotencyRetentionMs ?? DEFAULTS.idempotencyRetentionMs,
    rateLimits: { ...DEFAULT_RATE_LIMITS, ...config.rateLimits },
    unauthenticatedLimit: config.unauthenticatedLimit ?? UNAUTHENTICATED_LIMIT,
    embedder,
    memoryDecisions: config.memoryDecisions,
    signatures: {
      ...(config.signatures ? { mode: config.signatures } : {}),
      skewSeconds,
      publicUrl: config.publicUrl ? new URL(config.publicUrl) : null,
    },
    jwtIdentities: config.jwtIdentities ?? null,
    webhooks: { ...WEBHOOK_DEFAULTS, ...config.webhooks },
    toolAllow: config.toolAllow ?? [],
    idempotencyClaims: replica?.claims ?? threads?.idempotencyClaims(() => store.refreshReads()) ?? null,
    threads,
    replayMarks,
    policyDifferences: joined ? () => joined.differences() : null,
    alive: joined ? (node) => joined.alive(node) : null,
    catchUp: replica ? () => replica.catchUp() : null,
    draining: () => draining,
  }));
  const checkpoints = new AuditCheckpointSigner(store, services.audit, auditKey.key, { ...CHECKPOINT_DEFAULTS, ...config.auditCheckpoints });
  const adminKey = await orLeave(() =>
    services.keys.ensureBootstrapAdmin(store, config.adminKey, (record) => services.audit.appendInTransaction(operationDraft('SYSTEM', 'bootstrap admin key', record.id, 0))),
  );

  const app = uWS.App();
  const stream = new StreamHub(app, services.events, { ...STREAM_DEFAULTS, ...config.streaming }, services.metrics);
  // At the default level a request pays one boolean test for its log line; at debug, one JSON
  // line (a few microseconds).
  const logRequests = log.isLevelEnabled('debug');
  /** Counts, traces and logs a request answered here (its reply written here or by the thread that handed it over). */
  const record = (ctx: RequestContext, reply: Reply) => {
    const status = String(reply.status);
    const seconds = (performance.now() - ctx.startedAt) / 1000;
    services.metrics.requests.inc({ method: ctx.method, route: ctx.routeLabel, status });
    services.metrics.answered++;
    services.metrics.latency.observe({ method: ctx.method, route: ctx.routeLabel, status }, seconds);
    if (ctx.trace) {
      tracing!.finish(ctx.trace, {
        name: `${ctx.method} ${ctx.routeLabel}`,
        startedAt: ctx.startedAt,
        endedAt: performance.now(),
        traceparent: ctx.headers['traceparent'],
        attributes: { 'http.request.method': ctx.method, 'http.route': ctx.routeLabel, 'http.response.status_code': reply.status, 'gatehouse.request_id': ctx.requestId },
        status: reply.status,
        policy: ctx.policyCheck,
      });
    }
    if (logRequests) {
      log.debug({ requestId: ctx.requestId, method: ctx.method, route: ctx.routeLabel, status: reply.status, keyId: ctx.principal?.keyId ?? null, code: ctx.errorCode, ms: seconds * 1000 }, 'request');
    }
  };
  const send = (res: HttpResponse, ctx: RequestContext, reply: Reply) => {
    record(ctx, reply);
    if (res.aborted) return;
    // The stream's upgrade passed the pipeline: hand the connection to the stream (proxy/streaming/).
    if (reply.status === 101 && res.upgradeContext && ctx.principal) {
      const { principal, headers } = ctx;
      res.cork(() =>
        res.upgrade(
          stream.userData(principal),
          headers['sec-websocket-key']!,
          headers['sec-websocket-protocol'] ?? '',
          headers['sec-websocket-extensions'] ?? '',
          res.upgradeContext,
        ),
      );
      return;
    }
    writeReply(res, reply, ctx.requestId, ctx.closeConnection || draining);
  };

  // Once per server, not a closure per request: the TypeScript loader (tsx) names every named
  // closure it creates with a defineProperty call.
  const start = (res: HttpResponse, ctx: RequestContext) => {
    res.started = true;
    void runPipeline(ctx)
      .then((reply) => send(res, ctx, reply))
      .catch((error) => answerInternal(res, ctx.requestId, error))
      .finally(() => inFlight--);
  };

  // `--threads`: memory lives on thread 0, so the other threads hand it the routes that read it
  // (core/threads/thread-group.ts), and write back what it answers.
  const handsMemoryOver = threads !== null && threads.index > 0;
  const handOver = (res: HttpResponse, ctx: RequestContext, pattern: string) => {
    res.started = true;
    const request: HandedRequest = {
      method: ctx.method,
      path: ctx.path,
      rawQuery: ctx.rawQuery,
      headers: ctx.headers,
      params: ctx.params,
      pattern,
      rawBody: ctx.rawBody,
      bodyTooLarge: ctx.bodyTooLarge,
      remoteAddress: ctx.remoteAddress(),
      lateForShutdown: ctx.lateForShutdown,
    };
    void threads!
      .call(request, HANDED_REQUEST_TIMEOUT_MS)
      .then((answer) => {
        const { reply, requestId, close } = answer as HandedAnswer;
        if (!res.aborted) writeReply(res, reply, requestId, close || draining);
      })
      .catch((error) => answerInternal(res, ctx.requestId, error))
      .finally(() => inFlight--);
  };

  const handler = (routes: Map<string, RouteDef>, pattern: string) => {
    const allowed = [...routes.keys()];
    const params = paramNames(routes.values().next().value?.path ?? '');
    const receive = (res: HttpResponse, req: HttpRequest) => {
      const method = req.getCaseSensitiveMethod().toUpperCase();
      const route = routes.get(method);
      const headers: Record<string, string> = {};
      // A field sent on several lines is one value joined with ", " (RFC 9110 §5.3), which is
      // also how RFC 9421 signs it.
      req.forEach((name, value) => {
        headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
      });
      // Decoded and checked by validation (proxy/stages/path-params.ts), where a bad one is 400.
      const values: Record<string, string> = {};
      params.forEach((name, i) => (values[name] = req.getParameter(i) ?? ''));
      const ctx = newContext(services, tracing, {
        method,
        path: req.getUrl(),
        query: new URLSearchParams(req.getQuery() ?? ''),
        rawQuery: req.getQuery() ?? '',
        headers,
        params: values,
        route,
        routeLabel: route ? route.path : pattern,
        allowed: route ? [] : allowed,
        lateForShutdown: draining,
        malformed: malformedHead(headers),
        remoteAddress: () => peerAddress(res),
      });
      const length = headers['content-length'];
      const hasBody = ctx.malformed === null && ((length !== undefined && length !== '0') || headers['transfer-encoding'] !== undefined);
      const bodyLimit = services.limits.bodyBytes;
      inFlight++;
      // uWS responses accept user data; `aborted` marks one that must no longer be written,
      // `started` one whose pipeline runs.
      res.aborted = false;
      res.started = false;
      res.onAborted(() => {
        res.aborted = true;
        // A client gone before its body arrived never reaches the pipeline: nothing to drain.
        if (!res.started) inFlight--;
      });
      if (hasBody) {
        const declared = length === undefined ? null : Number(length);
        readBody(res, bodyLimit, declared, (result) => {
          if (result.ok) ctx.rawBody = result.body;
          else ctx.bodyTooLarge = true;
          if (handsMemoryOver && route?.readsMemory) handOver(res, ctx, pattern);
          else start(res, ctx);
        });
      } else if (handsMemoryOver && route?.readsMemory) {
        handOver(res, ctx, pattern);
      } else {
        start(res, ctx);
      }
    };
    return (res: HttpResponse, req: HttpRequest) => {
      try {
        receive(res, req);
      } catch (error) {
        answerInternal(res, requestId(), error);
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
  // Upgrade requests to the stream reach app.ws; plain requests to its path reach app.any above.
  const upgrade = handler(byPattern.get(uwsPattern(STREAM_PATH))!, uwsPattern(STREAM_PATH));
  app.ws(
    uwsPattern(STREAM_PATH),
    stream.behavior((res, req, context) => {
      res.upgradeContext = context;
      upgrade(res, req);
    }),
  );
  app.any('/*', handler(new Map(), 'unmatched'));
  if (threads?.index === 0) {
    threads.answerCalls(async (payload): Promise<HandedAnswer> => {
      const request = payload as HandedRequest;
      const route = byPattern.get(request.pattern)?.get(request.method);
      const ctx = newContext(services, tracing, {
        method: request.method,
        path: request.path,
        query: new URLSearchParams(request.rawQuery),
        rawQuery: request.rawQuery,
        headers: request.headers,
        params: request.params,
        route,
        routeLabel: route ? route.path : request.pattern,
        allowed: [],
        lateForShutdown: request.lateForShutdown || draining,
        malformed: malformedHead(request.headers),
        remoteAddress: () => request.remoteAddress,
      });
      ctx.rawBody = request.rawBody && Buffer.from(request.rawBody.buffer, request.rawBody.byteOffset, request.rawBody.byteLength);
      ctx.bodyTooLarge = request.bodyTooLarge;
      inFlight++;
      try {
        const reply = await runPipeline(ctx);
        record(ctx, reply);
        return { reply, requestId: ctx.requestId, close: ctx.closeConnection };
      } finally {
        inFlight--;
      }
    });
  }

  const listenSocket = await listen(app, host, config.port ?? DEFAULTS.port, (config.reusePort ?? false) || threads !== null).catch(async (error: unknown) => {
    stream.close();
    (app as TemplatedApp & { close(): void }).close();
    if (once) await services.memory.close();
    await census?.stop();
    await replica?.stopReading();
    await store.close();
    await replica?.disconnect();
    throw error;
  });
  const port = uWS.us_socket_local_port(listenSocket as unknown as uWS.us_socket);
  const purge = setInterval(() => {
    void services.unauthenticated.flush().catch(logThrottleFailure);
    if (!once) return;
    void services.idempotency.purgeExpired(store).catch(() => {});
    void services.events.prune({ ...DEFAULT_RETENTION, ...config.eventRetention }, services.webhooks.pruneFloor()).catch(() => {});
    void services.signatures.replay.purgeExpired(store).catch(() => {});
    void services.sessions.purgeExpired().catch(() => {});
    void store.pruneThreadLog().catch(() => {});
  }, 60_000);
  purge.unref();
  if (once) {
    services.webhooks.start(replica?.deliveries ?? null);
    checkpoints.start();
  }
  void embedder.warm?.();
  // Agents' tools are called over their own keep-alive agents, whether or not the gateway runs.
  const toolUpstreams = new Upstreams({ maxSockets: 64, lookup: services.agents.guard.lookup });
  services.agents.sender.setExecutor(new ToolExecution(toolUpstreams, services.agents.guard, services.limits.bodyBytes, tracing));
  // The other threads start once thread 0 listens: what is interrupted was left by the last process.
  const interruptedCalls = once ? await services.agents.calls.failInterrupted(services.alive) : 0;
  if (interruptedCalls) log.warn({ interruptedCalls }, 'agent tool calls interrupted by the last stop are marked failed');
  let gateway: RunningGateway | null = null;

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      draining = true;
      uWS.us_listen_socket_close(listenSocket);
      const { calls, sender } = services.agents;
      await settle(() => inFlight === 0 && !calls.busy, config.drainTimeoutMs ?? DEFAULTS.drainTimeoutMs);
      // A tool call still waiting on its tool is cut off, recorded failed (interrupted) and
      // answered 503 before connections close: no caller left without an answer may find its
      // call executed after a restart (docs/agents.md).
      sender.interrupt();
      await calls.idle();
      await settle(() => inFlight === 0, ANSWER_GRACE_MS);
      await gateway?.close();
      sender.setExecutor(null);
      toolUpstreams.close();
      clearInterval(purge);
      stream.close();
      await services.webhooks.stop();
      (app as TemplatedApp & { close(): void }).close();
      if (once) await services.memory.close();
      await services.unauthenticated.flush().catch(logThrottleFailure);
      await checkpoints.stop();
      services.detach();
      await census?.stop();
      await replica?.stopReading();
      await store.close();
      await replica?.disconnect();
      await tracing?.shutdown();
    })());

  if (config.proxy && !once) services.heldRequests.leaveSending();
  if (config.proxy && once) {
    if (threads) services.heldRequests.sendLearned();
    try {
      gateway = await startProxyGateway(services, config.proxy, host, config.drainTimeoutMs, tracing);
    } catch (error) {
      await close();
      throw error;
    }
  }
  return { host, port, url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, adminKey, services, gateway, close };
}

/** The gateway over the same services, its routes read from the file and followed as it changes. */
async function startProxyGateway(services: Services, proxy: NonNullable<ServerConfig['proxy']>, host: string, drainTimeoutMs: number | undefined, tracing: Tracing | null) {
  const routes = await RoutesSource.open(proxy.routesFile, { info: (m: string) => log.info(m), error: (m: string) => log.error(m) }, { jwt: services.jwtIdentities !== null });
  return startGateway({
    services,
    routes,
    host: proxy.host ?? host,
    port: proxy.port ?? GATEWAY_DEFAULTS.port,
    tracing,
    ...(drainTimeoutMs !== undefined ? { drainTimeoutMs } : {}),
  });
}

/**
 * A response's peer address. uWS answers for a response until it is ended or aborted; a caller
 * gone before its refusal was decided shares one bucket, so leaving early evades no limit.
 */
function peerAddress(res: HttpResponse): string {
  return res.aborted ? 'aborted' : Buffer.from(res.getRemoteAddressAsText()).toString();
}

/** Resolves once `done()` holds, or after `ms`. */
async function settle(done: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

function logThrottleFailure(error: unknown): void {
  log.error({ err: error }, 'could not record the throttled unauthenticated refusals');
}

function writeReply(res: HttpResponse, reply: Reply, id: string, close: boolean): void {
  res.cork(() => {
    res.writeStatus(statusLine(reply.status));
    for (const name in reply.headers) res.writeHeader(name, reply.headers[name]!);
    res.writeHeader('request-id', id);
    res.end(reply.body, close);
  });
}

/**
 * The last resort for an exception the pipeline did not turn into a reply. Never throws: it runs
 * inside uWS callbacks and promise handlers, where an exception would end the process.
 */
function answerInternal(res: HttpResponse, id: string, error: unknown): void {
  log.error({ requestId: id, err: error }, 'the request failed outside the pipeline');
  if (res.aborted) return;
  res.aborted = true;
  const reply = problemReply(new GatehouseError('internal', 'the server could not complete this request'), id);
  try {
    // What was written before the failure is unknown: the connection is not reused.
    writeReply(res, reply, id, true);
  } catch (writeError) {
    log.error({ requestId: id, err: writeError }, 'could not answer');
  }
}

/** uWS's listen with a host and options, which its typings leave out. */
type ListenWithOptions = { listen(host: string, port: number, options: ListenOptions, cb: (socket: us_listen_socket | false) => void): unknown };

/** uSockets' LIBUS_LISTEN_DEFAULT sets SO_REUSEPORT; LIBUS_LISTEN_EXCLUSIVE_PORT does not. */
const LISTEN_DEFAULT = 0 as ListenOptions;
const LISTEN_EXCLUSIVE_PORT = 1 as ListenOptions;

/**
 * Listens exclusively unless sharing is asked for: with SO_REUSEPORT a second server on a port in
 * use would start too, and the kernel would hand each of them part of the connections.
 */
function listen(app: TemplatedApp, host: string, port: number, reusePort: boolean): Promise<us_listen_socket> {
  return new Promise((resolve, reject) => {
    (app as unknown as ListenWithOptions).listen(host, port, reusePort ? LISTEN_DEFAULT : LISTEN_EXCLUSIVE_PORT, (socket) => {
      if (socket) resolve(socket);
      else
        void bindFailure(host, port).then((code) =>
          reject(new ListenError('the API', host, port, code, 'stop it, choose another port (--port), or start every instance with --reuse-port to share it on purpose')),
        );
    });
  });
}

function newContext(
  services: Services,
  tracing: Tracing | null,
  head: Pick<RequestContext, 'method' | 'path' | 'query' | 'rawQuery' | 'headers' | 'params' | 'route' | 'routeLabel' | 'allowed' | 'lateForShutdown' | 'malformed' | 'remoteAddress'>,
): RequestContext {
  return Object.assign(head, {
    services,
    requestId: requestId(),
    startedAt: performance.now(),
    rawBody: null,
    bodyTooLarge: false,
    body: undefined,
    queryValues: undefined,
    principal: null,
    signature: UNSIGNED,
    signatureSummary: null,
    idempotency: null,
    replayed: false,
    policyCheck: null,
    decision: null,
    draft: null,
    issuedKey: null,
    checks: [],
    writes: [],
    events: [],
    responseHeaders: {},
    errorCode: null,
    closeConnection: false,
    trace: tracing ? tracing.begin() : null,
  });
}

