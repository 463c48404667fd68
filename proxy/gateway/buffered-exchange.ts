import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { GatehouseError } from '../../core/errors.ts';
import type { HeldOutcome, HeldResponse } from '../../core/held-requests.ts';
import type { UpstreamSpan } from '../tracing.ts';
import { stripHopByHop } from './headers.ts';
import type { Upstreams } from './upstreams.ts';

/**
 * One request to an upstream with its whole body in hand, over the upstreams' keep-alive agents,
 * keeping at most `responseLimit` bytes of the answer: how approved held requests
 * (proxy/gateway/held-requests.ts) and agents' tool calls (proxy/gateway/tool-execution.ts) are
 * sent. `timeoutMs` is how long the upstream may stay silent; then the outcome is a
 * `upstream_timeout` failure, and an unreachable upstream an `upstream_unavailable` one. A traced
 * exchange (`span`) sends its span as the upstream's `traceparent` and ends it with the outcome.
 */
export interface BufferedRequest {
  /** Scheme, host and port of the upstream. */
  origin: URL;
  method: string;
  /** Path and query sent to the upstream. */
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  timeoutMs: number;
  /** Ends the exchange when aborted, as an `upstream_unavailable` failure. */
  signal?: AbortSignal;
}

export async function sendBuffered(upstreams: Upstreams, request: BufferedRequest, responseLimit: number, span: UpstreamSpan | null = null): Promise<HeldOutcome> {
  const traced = span ? { ...request, headers: { ...request.headers, traceparent: span.traceparent } } : request;
  try {
    const response = await exchange(upstreams, traced, responseLimit, performance.now());
    span?.answered(response.status);
    span?.end();
    return { kind: 'response', response, at: new Date().toISOString() };
  } catch (error) {
    const code = error instanceof GatehouseError ? error.code : 'upstream_unavailable';
    span?.end(code);
    return { kind: 'failure', code, detail: (error as Error).message, at: new Date().toISOString() };
  }
}

function exchange(upstreams: Upstreams, request: BufferedRequest, responseLimit: number, started: number): Promise<HeldResponse> {
  const { origin, body, timeoutMs } = request;
  const send = origin.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    let timedOut = false;
    const req = send(
      {
        protocol: origin.protocol,
        hostname: origin.hostname,
        port: origin.port,
        method: request.method,
        path: request.path,
        headers: { ...request.headers, host: origin.host, 'content-length': String(body.length) },
        agent: upstreams.agentFor(origin),
        signal: request.signal,
      },
      (res) => {
        const latencyMs = performance.now() - started;
        const chunks: Buffer[] = [];
        let kept = 0;
        let truncated = false;
        res.on('data', (chunk: Buffer) => {
          const room = responseLimit - kept;
          if (chunk.length > room) truncated = true;
          if (room > 0) {
            const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
            chunks.push(part);
            kept += part.length;
          }
        });
        res.once('end', () => {
          stripHopByHop(res.headers);
          const headers: Record<string, string> = {};
          for (const [name, value] of Object.entries(res.headers)) if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
          resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks, kept), truncated, latencyMs });
        });
        res.once('error', (error) => reject(upstreamError(timedOut, error)));
      },
    );
    req.setTimeout(timeoutMs, () => {
      timedOut = true;
      req.destroy();
    });
    req.once('error', (error) => reject(upstreamError(timedOut, error)));
    req.end(body);
  });
}

function upstreamError(timedOut: boolean, error: Error): GatehouseError {
  return timedOut
    ? new GatehouseError('upstream_timeout', 'the upstream did not answer in time')
    : new GatehouseError('upstream_unavailable', `the upstream could not be reached: ${error.message}`);
}
