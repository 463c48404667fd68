import type { ToolExecutor, ToolRequest } from '../../core/agents/tool-sender.ts';
import type { HeldOutcome } from '../../core/held-requests.ts';
import type { AddressGuard } from '../../core/ssrf-guard.ts';
import { sendBuffered } from './buffered-exchange.ts';
import type { Upstreams } from './upstreams.ts';

/**
 * Sends agents' tool calls for core/agents/ (docs/agents.md): the input as a JSON body, over the
 * keep-alive agents of `upstreams`, the answer kept up to `responseLimit` bytes. Tools' URLs
 * come from API users: `upstreams` resolves names through `guard`, and an address in the URL is
 * judged here, before connecting.
 */
export class ToolExecution implements ToolExecutor {
  constructor(
    private readonly upstreams: Upstreams,
    private readonly guard: AddressGuard,
    private readonly responseLimit: number,
  ) {}

  send(request: ToolRequest): Promise<HeldOutcome> {
    const url = new URL(request.url);
    const why = this.guard.literalRefusal(url);
    if (why) return Promise.resolve({ kind: 'failure', code: 'upstream_unavailable', detail: `refused: ${why}`, at: new Date().toISOString() });
    return sendBuffered(
      this.upstreams,
      { origin: url, method: request.method, path: url.pathname + url.search, headers: { 'content-type': 'application/json', accept: 'application/json' }, body: request.body, timeoutMs: request.timeoutMs, signal: request.signal },
      this.responseLimit,
    );
  }
}
