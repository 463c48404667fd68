import { randomUUID } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import type {
  ActionBody,
  CreateDecisionBody,
  CreatedKey,
  CreateKeyBody,
  Decision as DecisionSchema,
  Key as KeySchema,
  ListDecisionsQuery,
  Trace as TraceSchema,
} from '../schemas.ts';
import { signRequest, type SigningKey } from '../../core/signatures/signer.ts';
import type { RegisterSigningKeyBody, SigningKey as SigningKeySchema } from '../routes/signing-key-schemas.ts';
import { errorFor, type ProblemDocument } from './errors.ts';

/**
 * A typed client for the /v1 API. Types come from the same schemas the server validates with.
 *
 * Every write that accepts an Idempotency-Key gets one (yours, or a random one), and retries
 * reuse it: a retry after a lost response is answered from the server's record instead of acting
 * twice. Retries happen on network failures, 5xx, 429 (after Retry-After) and 409
 * `idempotency_in_flight`, with exponential backoff.
 */
export type Decision = Static<typeof DecisionSchema> & {
  /** `<gate>:<nextAction>`, e.g. `human_approval:approve`. */
  label: string;
};
export type Key = Static<typeof KeySchema>;
export type IssuedKey = Static<typeof CreatedKey>;
export type Trace = Static<typeof TraceSchema>;
export type DecisionFilter = ListDecisionsQuery;
export type DecisionAction = 'approve' | 'reject' | 'execute' | 'cancel';
export type RegisteredSigningKey = Static<typeof SigningKeySchema>;

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
   * must. Each attempt is signed afresh, so a retry is not refused as a replay.
   */
  signer?: SigningKey;
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

interface RequestPlan {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  body?: unknown;
  /** Safe to send again: reads, and writes carrying an Idempotency-Key. */
  retryable: boolean;
  headers?: Record<string, string>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function labelled(decision: Static<typeof DecisionSchema>): Decision {
  return { ...decision, label: `${decision.gate}:${decision.nextAction}` };
}

export class GatehouseClient {
  private readonly baseUrl: string;
  private readonly options: Required<Omit<ClientOptions, 'apiKey' | 'timeoutMs' | 'headers' | 'signer'>> & ClientOptions;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.options = { retries: 2, retryDelayMs: 100, maxRetryAfterMs: 5000, ...options };
  }

  async createDecision(body: CreateDecisionBody, options: WriteOptions = {}): Promise<Decision> {
    return labelled(await this.write('POST', '/v1/decisions', body, options));
  }

  async getDecision(id: string): Promise<Decision> {
    return labelled(await this.read(`/v1/decisions/${encodeURIComponent(id)}`));
  }

  async listDecisions(filter: Partial<DecisionFilter> = {}): Promise<{ data: Decision[]; nextCursor: string | null }> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(filter)) if (value !== undefined) query.set(name, String(value));
    const page = await this.read<{ data: Static<typeof DecisionSchema>[]; nextCursor: string | null }>(
      `/v1/decisions${query.size ? `?${query}` : ''}`,
    );
    return { data: page.data.map(labelled), nextCursor: page.nextCursor };
  }

  /** Every decision matching `filter`, page after page. */
  async *decisions(filter: Partial<Omit<DecisionFilter, 'cursor'>> = {}): AsyncGenerator<Decision> {
    let cursor: string | undefined;
    do {
      const page = await this.listDecisions({ ...filter, ...(cursor ? { cursor } : {}) });
      yield* page.data;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }

  async act(id: string, action: DecisionAction, body: ActionBody = {}, options: WriteOptions = {}): Promise<Decision> {
    return labelled(await this.write('POST', `/v1/decisions/${encodeURIComponent(id)}/${action}`, body, options));
  }

  approve(id: string, body: ActionBody = {}, options: WriteOptions = {}): Promise<Decision> {
    return this.act(id, 'approve', body, options);
  }

  reject(id: string, body: ActionBody = {}, options: WriteOptions = {}): Promise<Decision> {
    return this.act(id, 'reject', body, options);
  }

  execute(id: string, body: ActionBody = {}, options: WriteOptions = {}): Promise<Decision> {
    return this.act(id, 'execute', body, options);
  }

  cancel(id: string, body: ActionBody = {}, options: WriteOptions = {}): Promise<Decision> {
    return this.act(id, 'cancel', body, options);
  }

  /** Issues a key. Not retried: the route takes no Idempotency-Key (its reply holds the secret). */
  createKey(body: CreateKeyBody): Promise<IssuedKey> {
    return this.json({ method: 'POST', path: '/v1/keys', body, retryable: false });
  }

  async listKeys(env?: 'sandbox' | 'production'): Promise<Key[]> {
    return (await this.read<{ data: Key[] }>(`/v1/keys${env ? `?env=${env}` : ''}`)).data;
  }

  revokeKey(id: string, options: WriteOptions = {}): Promise<Key> {
    return this.write('DELETE', `/v1/keys/${encodeURIComponent(id)}`, undefined, options);
  }

  /** Registers a signing key (a public JWK, or an HMAC secret) for API key `keyId`. */
  registerSigningKey(keyId: string, body: RegisterSigningKeyBody, options: WriteOptions = {}): Promise<RegisteredSigningKey> {
    return this.write('POST', `/v1/keys/${encodeURIComponent(keyId)}/signing-keys`, body, options);
  }

  async listSigningKeys(keyId: string): Promise<RegisteredSigningKey[]> {
    return (await this.read<{ data: RegisteredSigningKey[] }>(`/v1/keys/${encodeURIComponent(keyId)}/signing-keys`)).data;
  }

  revokeSigningKey(keyId: string, kid: string, options: WriteOptions = {}): Promise<RegisteredSigningKey> {
    return this.write('DELETE', `/v1/keys/${encodeURIComponent(keyId)}/signing-keys/${encodeURIComponent(kid)}`, undefined, options);
  }

  /** The audit entries of a decision, by trace reference or decision id. */
  trace(ref: string): Promise<Trace> {
    return this.read(`/v1/impact/trace?ref=${encodeURIComponent(ref)}`);
  }

  openapi(): Promise<Record<string, unknown>> {
    return this.read('/v1/openapi.json');
  }

  async health(): Promise<boolean> {
    return (await this.raw({ method: 'GET', path: '/healthz', retryable: true })).status === 200;
  }

  async ready(): Promise<boolean> {
    return (await this.raw({ method: 'GET', path: '/readyz', retryable: true })).status === 200;
  }

  private read<T>(path: string): Promise<T> {
    return this.json({ method: 'GET', path, retryable: true });
  }

  private write<T>(method: 'POST' | 'DELETE', path: string, body: unknown, options: WriteOptions): Promise<T> {
    const headers: Record<string, string> = { 'idempotency-key': options.idempotencyKey ?? randomUUID() };
    if (options.traceparent) headers.traceparent = options.traceparent;
    return this.json({ method, path, body, retryable: true, headers });
  }

  private async json<T>(plan: RequestPlan): Promise<T> {
    const response = await this.raw(plan);
    return JSON.parse(response.body) as T;
  }

  /** Sends with retries; resolves with a 2xx, throws a typed error for anything else. */
  async raw(plan: RequestPlan): Promise<RawResponse> {
    const { retries, retryDelayMs, maxRetryAfterMs } = this.options;
    for (let attempt = 0; ; attempt++) {
      const backoff = retryDelayMs * 2 ** attempt;
      let response: RawResponse;
      try {
        response = await this.once(plan);
      } catch (error) {
        if (!plan.retryable || attempt >= retries) throw error;
        await sleep(backoff);
        continue;
      }
      if (response.status < 400) return response;
      const problem = this.problem(response);
      const retryAfter = Number(response.headers.get('retry-after') ?? 0);
      const error = errorFor(problem, retryAfter);
      const transient = response.status >= 500 || response.status === 429 || problem.code === 'idempotency_in_flight';
      if (!transient || !plan.retryable || attempt >= retries) throw error;
      await sleep(response.status === 429 ? Math.min(retryAfter * 1000, maxRetryAfterMs) : backoff);
    }
  }

  private async once(plan: RequestPlan): Promise<RawResponse> {
    const headers: Record<string, string> = { accept: 'application/json', ...this.options.headers, ...plan.headers };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    if (plan.body !== undefined) headers['content-type'] = 'application/json';
    const url = `${this.baseUrl}${plan.path}`;
    const body = plan.body !== undefined ? JSON.stringify(plan.body) : undefined;
    if (this.options.signer) Object.assign(headers, signRequest({ method: plan.method, url, headers, body: body ?? null }, this.options.signer));
    const response = await fetch(url, {
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
