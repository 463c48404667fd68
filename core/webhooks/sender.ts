import { Agent, request } from 'undici';
import type { Attempt } from './deliveries.ts';
import type { AddressGuard } from '../ssrf-guard.ts';

/**
 * One HTTP attempt of a webhook delivery: a POST over a keep-alive connection pool, bounded by
 * a timeout, that succeeds on a 2xx answer only. Connections resolve names through the address
 * guard, so a delivery can never reach a refused address whatever DNS answers at the time.
 */
const EXCERPT_BYTES = 1024;

export interface AttemptResult extends Attempt {
  ok: boolean;
}

export class WebhookSender {
  private readonly agent: Agent;

  constructor(
    private readonly guard: AddressGuard,
    private readonly timeoutMs: number,
  ) {
    this.agent = new Agent({ keepAliveTimeout: 30_000, connections: 8, connect: { lookup: guard.lookup, timeout: timeoutMs } });
  }

  async send(url: string, headers: Record<string, string>, payload: string): Promise<AttemptResult> {
    const at = new Date();
    const started = performance.now();
    const finish = (fields: Pick<Attempt, 'status' | 'error' | 'response'>): AttemptResult => ({
      ...fields,
      at: at.toISOString(),
      latencyMs: Math.round((performance.now() - started) * 10) / 10,
      ok: fields.status !== null && fields.status >= 200 && fields.status < 300,
    });
    try {
      const target = new URL(url);
      const why = this.guard.literalRefusal(target);
      if (why) return finish({ status: null, error: `refused: ${why}`, response: null });
      const answer = await request(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'gatehouse-webhooks/1', ...headers },
        body: payload,
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      const response = await excerpt(answer.body);
      return finish({ status: answer.statusCode, error: null, response });
    } catch (error) {
      const err = error as Error & { code?: string };
      const reason = err.name === 'TimeoutError' ? `timed out after ${this.timeoutMs} ms` : (err.code ? `${err.code}: ` : '') + err.message;
      return finish({ status: null, error: reason, response: null });
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/** The first KiB of the body as text; the rest is discarded without being read into memory. */
async function excerpt(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= EXCERPT_BYTES) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8');
}
