import type { HeldOutcome } from '../held-requests.ts';
import { EXCERPT_BYTES, type ResponseExcerpt, type Step, type UpstreamExcerpt } from './runs.ts';
import type { ToolEndpoint } from './tools.ts';

/**
 * Calling a tool's endpoint. Core does not speak HTTP: the server registers a ToolExecutor
 * (proxy/gateway/tool-execution.ts), which sends over the same keep-alive agents, timeouts and
 * bounded response reading as held proxied requests, and answers in the same outcome shape.
 * What a step keeps of the exchange is an excerpt.
 */
export interface ToolRequest {
  method: string;
  url: string;
  body: Buffer;
  timeoutMs: number;
  /** Aborted when the server's drain ends: the executor then ends the exchange at once. */
  signal?: AbortSignal;
  trace?: ToolTrace;
}

/** Where a tool exchange belongs in a distributed trace (proxy/tracing.ts). */
export interface ToolTrace {
  /** The W3C traceparent of the request that made the call, as it arrived; the exchange continues its trace. */
  traceparent: string | undefined;
  /** Attributes of the exchange's span: the run, the call, the tool. */
  attributes: Record<string, string | number>;
}

export interface ToolExecutor {
  send(request: ToolRequest): Promise<HeldOutcome>;
}

export interface ToolExchange {
  request: UpstreamExcerpt;
  response: ResponseExcerpt | null;
  error: { code: string; detail: string } | null;
  /** The upstream answered with a 2xx status. */
  ok: boolean;
  /** The response body parsed as JSON, when it is JSON and complete. */
  json: unknown;
}

/** What a step says of a call `interrupt` ended: once sent, whether the tool acted is not known. */
const CUT_OFF = 'interrupted by shutdown: the server stopped waiting for the tool, so the call was not completed; it may have reached the tool, and is not made again';
const NOT_SENT = 'interrupted by shutdown before it was sent: it did not reach the tool';

export class ToolSender {
  private executor: ToolExecutor | null = null;
  private readonly shutdown = new AbortController();

  /** The server registers its executor while it runs. */
  setExecutor(executor: ToolExecutor | null): void {
    this.executor = executor;
  }

  /**
   * Ends every exchange still waiting on its tool, and refuses later ones, as `interrupted`
   * failures. The server calls it when its drain ends, before closing connections: a call cut
   * off here is recorded failed and its caller answered so, where letting the tool answer later
   * would record a call as executed whose caller never heard of it.
   */
  interrupt(): void {
    this.shutdown.abort();
  }

  /** Sends `payload` as JSON to `endpoint`, traced as `trace` says; never throws for the upstream's failures. */
  async send(endpoint: ToolEndpoint, payload: unknown, trace?: ToolTrace): Promise<ToolExchange> {
    const text = JSON.stringify(payload);
    const request: UpstreamExcerpt = { method: endpoint.method, url: endpoint.url, body: excerpt(Buffer.from(text)).text };
    const { signal } = this.shutdown;
    if (signal.aborted) return { request, response: null, error: { code: 'interrupted', detail: NOT_SENT }, ok: false, json: null };
    const outcome: HeldOutcome = this.executor
      ? await this.executor.send({ method: endpoint.method, url: endpoint.url, body: Buffer.from(text), timeoutMs: endpoint.timeoutMs, signal, ...(trace ? { trace } : {}) })
      : { kind: 'failure', code: 'upstream_unavailable', detail: 'no tool executor is running', at: new Date().toISOString() };
    if (outcome.kind === 'failure') {
      const error = signal.aborted ? { code: 'interrupted', detail: CUT_OFF } : { code: outcome.code, detail: outcome.detail };
      return { request, response: null, error, ok: false, json: null };
    }
    const { status, headers, body, truncated, latencyMs } = outcome.response;
    const cut = excerpt(body);
    const response: ResponseExcerpt = { status, headers: headerExcerpt(headers), body: cut.text, truncated: truncated || cut.cut, latencyMs };
    const ok = status >= 200 && status < 300;
    return {
      request,
      response,
      error: ok ? null : { code: 'upstream_status', detail: `the tool answered ${status}` },
      ok,
      json: truncated ? null : parseJson(body),
    };
  }
}

/** The headers worth keeping in a trace: what the body is, and how the upstream identified it. */
const KEPT_HEADERS = ['content-type', 'content-length', 'location', 'etag', 'x-request-id', 'request-id', 'retry-after'];

function headerExcerpt(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of KEPT_HEADERS) if (headers[name] !== undefined) out[name] = headers[name]!;
  return out;
}

function excerpt(body: Buffer): { text: string; cut: boolean } {
  return body.length > EXCERPT_BYTES ? { text: body.subarray(0, EXCERPT_BYTES).toString('utf8'), cut: true } : { text: body.toString('utf8'), cut: false };
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
}

/** Where a step's tool exchanges belong in a trace: the calling request's, with the run, call and tool named. */
export function stepTrace(runId: string, step: Step): ToolTrace {
  return { traceparent: step.traceparent, attributes: { 'gatehouse.agent.run_id': runId, 'gatehouse.agent.call_id': step.id, 'gatehouse.agent.tool': step.tool } };
}
