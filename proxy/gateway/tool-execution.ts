import type { ToolExecutor, ToolRequest } from '../../core/agents/tool-sender.ts';
import type { HeldOutcome } from '../../core/held-requests.ts';
import type { AddressGuard } from '../../core/ssrf-guard.ts';
import { sendBuffered } from './buffered-exchange.ts';
import type { Tracing } from '../tracing.ts';
import type { Upstreams } from './upstreams.ts';

/**
 * Sends agents' tool calls for core/agents/ (docs/agents.md): the input as a JSON body, over the
 * keep-alive agents of `upstreams`, the answer kept up to `responseLimit` bytes. Tools' URLs
 * come from API users: `upstreams` resolves names through `guard`, and an address in the URL is
 * judged here, before connecting. With `tracing`, each exchange is a client span in the trace of
 * the request that made the call (its `traceparent`, kept with the call), which the tool receives
 * as its own `traceparent`.
 */
export class ToolExecution implements ToolExecutor {
  constructor(
    private readonly upstreams: Upstreams,
    private readonly guard: AddressGuard,
    private readonly responseLimit: number,
    private readonly tracing: Tracing | null = null,
  ) {}

  send(request: ToolRequest): Promise<HeldOutcome> {
    const url = new URL(request.url);
    const why = this.guard.literalRefusal(url);
    if (why) return Promise.resolve({ kind: 'failure', code: 'upstream_unavailable', detail: `refused: ${why}`, at: new Date().toISOString() });
    const exchange = { origin: url, method: request.method, path: url.pathname + url.search };
    const span = this.tracing?.upstreamCall(request.trace?.traceparent, { ...exchange, attributes: request.trace?.attributes ?? {} }) ?? null;
    return sendBuffered(
      this.upstreams,
      { ...exchange, headers: { 'content-type': 'application/json', accept: 'application/json' }, body: request.body, timeoutMs: request.timeoutMs, signal: request.signal },
      this.responseLimit,
      span,
    );
  }
}
