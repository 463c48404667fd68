import type { SigningKey } from '../../core/signatures/signer.ts';
import { errorFor, type ProblemDocument } from './errors.ts';

/**
 * How the client talks to the server: fetch, retries, signing, and problem documents turned into
 * typed errors. Only web-platform APIs at load time, so the client runs in Node 20 and browsers;
 * the RFC 9421 signer (node:crypto) is loaded the first time a request is signed. A bundle built
 * for browsers leaves the signer out (the `browser` map of package.json), so signing there is
 * refused with a clear error instead of failing the build.
 *
 * Retries happen on network failures, 5xx, 429 (after Retry-After) and 409
 * `idempotency_in_flight`, with exponential backoff, for reads and for writes that carry an
 * Idempotency-Key: a retry after a lost response is answered from the server's record instead of
 * acting twice.
 */
export interface ClientOptions {
  baseUrl: string;
  apiKey?: string;
  /** Attempts after the first (default 2). */
  retries?: number;
  /** First backoff delay in ms, doubled each retry (default 100). */
  retryDelayMs?: number;
  /** Longest wait honoured from Retry-After, in ms (default 5000). */
  maxRetryAfterMs?: number;
  timeoutMs?: number;
  headers?: Record<string, string>;
  /**
   * Signs every request (RFC 9421, core/signatures/signer.ts) with this key: production keys
   * must. Each attempt is signed afresh, so a retry is not refused as a replay. Node only.
   */
  signer?: SigningKey;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
}

export interface WriteOptions {
  idempotencyKey?: string;
  traceparent?: string;
}

export interface RawResponse {
  status: number;
  headers: Headers;
  body: string;
  replayed: boolean;
}

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestPlan {
  method: Method;
  path: string;
  query?: Query;
  body?: unknown;
  /** Safe to send again: reads, and writes carrying an Idempotency-Key. */
  retryable: boolean;
  headers?: Record<string, string>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A path segment, percent-encoded. */
export const seg = (value: string) => encodeURIComponent(value);

export class Transport {
  readonly baseUrl: string;
  private readonly retries: number;
  private readonly retryDelayMs: number;
  private readonly maxRetryAfterMs: number;

  constructor(readonly options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.retries = options.retries ?? 2;
    this.retryDelayMs = options.retryDelayMs ?? 100;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 5000;
  }

  read<T>(path: string, query?: Query): Promise<T> {
    return this.json({ method: 'GET', path, retryable: true, ...(query ? { query } : {}) });
  }

  /** A write that takes an Idempotency-Key: it gets one (yours or a random one) and is retried with it. */
  idempotent<T>(method: Method, path: string, body: unknown, options: WriteOptions = {}): Promise<T> {
    const headers: Record<string, string> = { 'idempotency-key': options.idempotencyKey ?? globalThis.crypto.randomUUID() };
    if (options.traceparent) headers.traceparent = options.traceparent;
    return this.json({ method, path, body, retryable: true, headers });
  }

  /** A write the server cannot recognise when repeated: sent once. */
  once<T>(method: Method, path: string, body?: unknown): Promise<T> {
    return this.json({ method, path, body, retryable: false });
  }

  async json<T>(plan: RequestPlan): Promise<T> {
    const response = await this.request(plan);
    return (response.body ? JSON.parse(response.body) : undefined) as T;
  }

  /** Sends with retries; resolves with a 2xx, throws a typed error for anything else. */
  async request(plan: RequestPlan): Promise<RawResponse> {
    for (let attempt = 0; ; attempt++) {
      const backoff = this.retryDelayMs * 2 ** attempt;
      let response: RawResponse;
      try {
        response = await this.send(plan);
      } catch (error) {
        if (!plan.retryable || attempt >= this.retries) throw error;
        await sleep(backoff);
        continue;
      }
      if (response.status < 400) return response;
      const problem = this.problem(response);
      const retryAfter = Number(response.headers.get('retry-after') ?? 0);
      const error = errorFor(problem, retryAfter);
      const transient = response.status >= 500 || response.status === 429 || problem.code === 'idempotency_in_flight';
      if (!transient || !plan.retryable || attempt >= this.retries) throw error;
      await sleep(response.status === 429 ? Math.min(retryAfter * 1000, this.maxRetryAfterMs) : backoff);
    }
  }

  /** The URL of `path` with `query`'s defined members. */
  url(path: string, query: Query = {}): string {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) if (value !== undefined) search.set(name, String(value));
    return `${this.baseUrl}${path}${search.size ? `?${search}` : ''}`;
  }

  private async send(plan: RequestPlan): Promise<RawResponse> {
    const headers: Record<string, string> = { accept: 'application/json', ...this.options.headers, ...plan.headers };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    if (plan.body !== undefined) headers['content-type'] = 'application/json';
    const url = this.url(plan.path, plan.query);
    const body = plan.body !== undefined ? JSON.stringify(plan.body) : undefined;
    if (this.options.signer) {
      const { signRequest } = (await import('../../core/signatures/signer.ts')) as Partial<typeof import('../../core/signatures/signer.ts')>;
      if (typeof signRequest !== 'function') throw new TypeError('request signing (options.signer) needs Node: this browser build of the client leaves the signer out');
      Object.assign(headers, signRequest({ method: plan.method, url, headers, body: body ?? null }, this.options.signer));
    }
    const response = await (this.options.fetch ?? fetch)(url, {
      method: plan.method,
      headers,
      ...(body !== undefined ? { body } : {}),
      ...(this.options.timeoutMs ? { signal: AbortSignal.timeout(this.options.timeoutMs) } : {}),
    });
    return {
      status: response.status,
      headers: response.headers,
      body: await response.text(),
      replayed: response.headers.get('idempotent-replayed') === 'true',
    };
  }

  private problem(response: RawResponse): ProblemDocument {
    try {
      const parsed = JSON.parse(response.body) as ProblemDocument;
      if (typeof parsed.code === 'string') return parsed;
    } catch {
      // not a problem document: described below
    }
    return {
      type: 'about:blank',
      title: 'Unexpected response',
      status: response.status,
      detail: response.body.slice(0, 200),
      code: response.status >= 500 ? 'internal' : 'invalid_request',
      requestId: response.headers.get('request-id') ?? '',
    };
  }
}
