import type { IncomingMessage } from 'node:http';
import { GatehouseError } from '../../core/errors.ts';
import type { ProxyExchange } from './exchange.ts';

/**
 * The gateway streams request bodies to the upstream unread. It reads one whole only when it must
 * have the bytes in hand: to check a signature's Content-Digest against them
 * (proxy/gateway/signature.ts), or to store a request held for approval
 * (proxy/gateway/held-requests.ts). Either way the body is bounded by the body limit (413
 * `payload_too_large` beyond, the rest left unread and the connection closed) and read once: the
 * bytes checked are the bytes stored or forwarded.
 */
export async function readBody(ex: ProxyExchange, req: IncomingMessage, limit: number, why: string): Promise<Buffer> {
  if (ex.body) return ex.body;
  const body = await readBounded(req, limit);
  if (body === null) throw new GatehouseError('payload_too_large', `${why}, and its body may not exceed ${limit} bytes`, { limit });
  ex.body = body;
  return body;
}

/** Reads a body of at most `limit` bytes; null when it is larger (reading stops there). */
function readBounded(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.pause();
        resolve(null);
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks, size)));
    req.once('error', reject);
  });
}
