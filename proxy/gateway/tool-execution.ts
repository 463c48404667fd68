import type { ToolExecutor, ToolRequest } from '../../core/agents/tool-sender.ts';
import type { HeldOutcome } from '../../core/held-requests.ts';
import { sendBuffered } from './buffered-exchange.ts';
import type { Upstreams } from './upstreams.ts';

/**
 * Sends agents' tool calls for core/agents/ (docs/agents.md): the input as a JSON body, over the
 * keep-alive agents of `upstreams`, the answer kept up to `responseLimit` bytes.
 */
export class ToolExecution implements ToolExecutor {
  constructor(
    private readonly upstreams: Upstreams,
    private readonly responseLimit: number,
  ) {}

  send(request: ToolRequest): Promise<HeldOutcome> {
    const url = new URL(request.url);
    return sendBuffered(
      this.upstreams,
      { origin: url, method: request.method, path: url.pathname + url.search, headers: { 'content-type': 'application/json', accept: 'application/json' }, body: request.body, timeoutMs: request.timeoutMs },
      this.responseLimit,
    );
  }
}
