import type { HttpResponse } from 'uWebSockets.js';

/**
 * Collects a request body from uWebSockets.js, bounded by `limit`. Chunks are copied because
 * uWS reuses their memory once the callback returns. A body that outgrows the limit stops being
 * collected; the caller answers 413 and closes the connection rather than read the rest.
 */
export type BodyResult = { ok: true; body: Buffer } | { ok: false; tooLarge: true };

export function readBody(res: HttpResponse, limit: number, declaredLength: number | null, done: (result: BodyResult) => void): void {
  if (declaredLength !== null && declaredLength > limit) {
    done({ ok: false, tooLarge: true });
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  res.onData((chunk, isLast) => {
    if (finished) return;
    size += chunk.byteLength;
    if (size > limit) {
      finished = true;
      done({ ok: false, tooLarge: true });
      return;
    }
    chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (isLast) {
      finished = true;
      done({ ok: true, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
    }
  });
}
