import { Agent as HttpAgent, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { LookupFunction, Socket } from 'node:net';
import { Readable } from 'node:stream';
import type { Url } from 'node:url';
import httpProxy from 'http-proxy';
import { stripHopByHop } from './headers.ts';
import type { ProxyRoute } from './routes-config.ts';
import { log } from '../../core/log.ts';
import type { GatewaySpan, UpstreamSpan } from '../tracing.ts';

/**
 * Forwarding to upstreams with http-proxy: one keep-alive agent per upstream origin, bodies
 * streamed both ways (never buffered here; a body the gateway already read, to check its signed
 * digest, is sent from memory), per-route timeouts and retries.
 *
 * - A route's `timeoutMs` is how long the upstream may stay silent: connecting, before its
 *   response, or between body chunks. Before any response byte it is a 504; after, the client
 *   connection is cut (the status line is already sent).
 * - A refused or reset connection before any response byte is a 502.
 * - Retries (`retry.attempts`) happen only for idempotent methods (GET, HEAD, OPTIONS, PUT,
 *   DELETE), only for requests whose body is not streamed (a streamed body is gone once sent,
 *   and is not kept to be sent again), and only while nothing of the response has been sent.
 * - When the request is traced, each try is a client span under the request's, and the upstream
 *   receives that span as its `traceparent`.
 */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/** The request's body: none, the client's stream as it arrives, or the bytes already read. */
export type ForwardBody = 'none' | 'streamed' | Buffer;

export type UpstreamFailure = 'upstream_unavailable' | 'upstream_timeout';

export interface ForwardResult {
  /** The upstream's status, when it answered. */
  upstreamStatus: number | null;
  /** From the first try to the upstream's response headers. */
  latencyMs: number | null;
  /** Why no (complete) answer came; with a status, the response was cut after it began. */
  failure: UpstreamFailure | null;
  /** The client went away before the exchange finished. */
  clientGone: boolean;
  attempts: number;
}

interface Attempt {
  timeoutMs: number;
  timedOut: boolean;
  onResponse(proxyRes: IncomingMessage): void;
}

export interface UpstreamOptions {
  /** Sockets per upstream origin (in use and idle); requests beyond it queue in the agent. */
  maxSockets: number;
  /** Resolves upstream host names (agents' tools resolve through the SSRF guard); unset: DNS. */
  lookup?: LookupFunction;
}

/**
 * An upstream as http-proxy reads a target, made once per route: given the URL string, it would
 * parse it again on every request.
 */
function proxyTarget(upstream: URL): Partial<Url> {
  return {
    protocol: upstream.protocol,
    host: upstream.host,
    // http.request takes an IPv6 address without its brackets.
    hostname: upstream.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: upstream.port,
    path: upstream.pathname,
  };
}

/** What the upstream is asked for: its base path, then the request's path and query. */
export function upstreamPath(upstream: URL, target: string): string {
  return upstream.pathname.replace(/\/$/, '') + target;
}

export class Upstreams {
  readonly proxy = httpProxy.createProxyServer({ changeOrigin: true, xfwd: false, ws: true });
  private readonly agents = new Map<string, HttpAgent>();
  /** By upstream URL object: a routes reload parses new ones, so entries go with the old routes. */
  private readonly targets = new WeakMap<URL, Partial<Url>>();
  /** The attempt in flight for each client request, for the proxy's server-wide events. */
  private readonly attempts = new WeakMap<IncomingMessage, Attempt>();
  /** Told the upstream's answer to each upgrade in flight (101, or the status it refused with). */
  private readonly upgrades = new WeakMap<IncomingMessage, (status: number) => void>();

  constructor(private readonly options: UpstreamOptions) {
    this.proxy.on('proxyReq', (proxyReq, req) => {
      const attempt = this.attempts.get(req);
      if (!attempt) return;
      proxyReq.setTimeout(attempt.timeoutMs, () => {
        attempt.timedOut = true;
        proxyReq.destroy();
      });
    });
    this.proxy.on('proxyRes', (proxyRes, req) => {
      stripHopByHop(proxyRes.headers);
      this.attempts.get(req)?.onResponse(proxyRes);
    });
    this.proxy.on('proxyReqWs', (proxyReq, req) => {
      const answered = this.upgrades.get(req);
      if (!answered) return;
      proxyReq.once('upgrade', (proxyRes: IncomingMessage, upstreamSocket: Socket) => {
        // http-proxy pipes the two sockets but ends one only when the other ends or errs: a side
        // destroyed outright (the gateway closing, a client vanishing) would leave the other open.
        req.socket.once('close', () => upstreamSocket.destroy());
        upstreamSocket.once('close', () => req.socket.destroy());
        answered(proxyRes.statusCode ?? 101);
      });
      proxyReq.once('response', (proxyRes: IncomingMessage) => answered(proxyRes.statusCode ?? 502));
    });
    // Errors reach the per-call callbacks; this keeps an unexpected one from throwing.
    this.proxy.on('error', (error) => log.error({ err: error }, 'proxy error'));
  }

  /** The keep-alive agent for an upstream's origin. */
  agentFor(upstream: URL): HttpAgent {
    let agent = this.agents.get(upstream.origin);
    if (!agent) {
      const { maxSockets, lookup } = this.options;
      const options = { keepAlive: true, maxSockets, maxFreeSockets: maxSockets, scheduling: 'lifo' as const, ...(lookup ? { lookup } : {}) };
      agent = upstream.protocol === 'https:' ? new HttpsAgent(options) : new HttpAgent(options);
      this.agents.set(upstream.origin, agent);
    }
    return agent;
  }

  private targetFor(upstream: URL): Partial<Url> {
    let target = this.targets.get(upstream);
    if (!target) {
      target = proxyTarget(upstream);
      this.targets.set(upstream, target);
    }
    return target;
  }

  /**
   * Streams `req` to the route's upstream and the answer back into `res`. Resolves when the
   * exchange is over; on a failure before any response byte nothing is written, and the caller
   * answers 502 or 504. `span` is the request's, when it is traced.
   */
  forward(req: IncomingMessage, res: ServerResponse, route: ProxyRoute, body: ForwardBody, span: GatewaySpan | null = null): Promise<ForwardResult> {
    const retryable = IDEMPOTENT.has(req.method ?? '') && body !== 'streamed';
    const maxAttempts = retryable ? route.retry.attempts : 1;
    const started = performance.now();
    return new Promise((resolve) => {
      const result: ForwardResult = { upstreamStatus: null, latencyMs: null, failure: null, clientGone: false, attempts: 0 };
      let settled = false;
      let call: UpstreamSpan | null = null;
      const settle = () => {
        if (settled) return;
        settled = true;
        this.attempts.delete(req);
        call?.end(result.failure);
        resolve(result);
      };
      res.once('finish', settle);
      res.once('close', () => {
        if (!res.writableFinished && result.failure === null) result.clientGone = true;
        settle();
      });
      const attempt = () => {
        result.attempts++;
        // A retry that gets its answer leaves the failed tries behind.
        result.failure = null;
        if (span) {
          // http-proxy copies the request's headers into each try's.
          call = span.upstream({ method: req.method ?? 'GET', origin: route.upstream, path: upstreamPath(route.upstream, req.url ?? '/'), resendCount: result.attempts - 1 });
          req.headers['traceparent'] = call.traceparent;
        }
        const state: Attempt = {
          timeoutMs: route.timeoutMs,
          timedOut: false,
          onResponse(proxyRes) {
            result.upstreamStatus = proxyRes.statusCode ?? null;
            result.latencyMs = performance.now() - started;
            call?.answered(result.upstreamStatus ?? 0);
            // An upstream that dies mid-body must not leave the client waiting for the rest.
            proxyRes.once('aborted', () => res.destroy());
            proxyRes.once('error', () => res.destroy());
          },
        };
        this.attempts.set(req, state);
        // The request stream is spent once read: a body read already, and every retry (only
        // requests without a streamed body are retried), are sent from memory instead.
        const buffer = Buffer.isBuffer(body) ? Readable.from([body]) : result.attempts > 1 ? Readable.from([]) : undefined;
        this.proxy.web(req, res, { target: this.targetFor(route.upstream), agent: this.agentFor(route.upstream), ...(buffer ? { buffer } : {}) }, () => {
          result.failure = state.timedOut ? 'upstream_timeout' : 'upstream_unavailable';
          call?.end(result.failure);
          if (res.headersSent) {
            res.destroy();
            return;
          }
          if (settled || req.socket.destroyed) return settle();
          if (result.attempts < maxAttempts) {
            setTimeout(attempt, route.retry.backoffMs * 2 ** (result.attempts - 1));
            return;
          }
          settle();
        });
      };
      attempt();
    });
  }

  /**
   * Hands an allowed WebSocket upgrade to the upstream on its own connection. `answered` hears
   * the upstream's status; `failed` hears that it could not be reached (or went away).
   */
  upgrade(req: IncomingMessage, socket: Socket, head: Buffer, route: ProxyRoute, answered: (status: number) => void, failed: () => void): void {
    this.upgrades.set(req, answered);
    this.proxy.ws(req, socket, head, { target: this.targetFor(route.upstream), agent: false }, failed);
  }

  close(): void {
    this.proxy.close();
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}
