/**
 * The HTTP load generator shared by the scenarios. It runs in a child process (this file, run
 * directly) so it does not share the event loop, and as far as the OS allows the core, of the
 * server under test.
 *
 * Two modes: closed loop (`rate: 0`, every connection sends its next request when the last one
 * returns: maximum throughput) and open loop at a fixed rate, where latency counts from when a
 * request was due, not when it was sent, so a stalled server is not hidden by a stalled client
 * (coordinated omission).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LatencySummary } from '../scenario.ts';

export interface LoadSpec {
  url: string;
  method?: string;
  headers: Record<string, string>;
  body?: string;
  /** 0 = as fast as the connections allow. */
  rate: number;
  durationS: number;
  warmupS: number;
  connections: number;
  /**
   * Requests that differ one from the next (a fresh signature, nonce or idempotency key): a
   * module, loaded in the generator's process, whose default export takes `options` and returns
   * a function giving each request's headers (added to `headers`) and body.
   */
  perRequest?: { module: string; options?: unknown };
}

/** The default export of a `perRequest` module. */
export type PerRequestFactory = (options: unknown) => (seq: number, url: URL) => { headers?: Record<string, string>; body?: string };

export interface LoadResult {
  requests: number;
  errors: number;
  statuses: Record<string, number>;
  throughput: number;
  latencyMs: LatencySummary;
  /** Compressed base64 HDR histogram of latencies in µs. */
  histogram: string;
}

const SELF = fileURLToPath(import.meta.url);

async function generateLoad(spec: LoadSpec): Promise<LoadResult> {
  const { Pool } = await import('undici');
  const hdr = await import('hdr-histogram-js');
  const url = new URL(spec.url);
  const path = url.pathname + url.search;
  const method = (spec.method ?? 'POST') as 'POST';
  const pool = new Pool(url.origin, { connections: spec.connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const histogram = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3 });
  const statuses: Record<string, number> = {};
  let errors = 0;
  let recording = false;
  let completed = 0;
  const perRequest = spec.perRequest
    ? ((await import(spec.perRequest.module)) as { default: PerRequestFactory }).default(spec.perRequest.options)
    : null;
  let seq = 0;

  const send = async (dueNs: bigint) => {
    try {
      const varying = perRequest?.(seq++, url);
      const headers = varying?.headers ? { ...spec.headers, ...varying.headers } : spec.headers;
      const payload = varying?.body ?? spec.body;
      const { statusCode, body } = await pool.request({ path, method, headers, ...(payload !== undefined ? { body: payload } : {}) });
      await body.dump();
      if (recording) {
        statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
        histogram.recordValue(Math.max(1, Number((process.hrtime.bigint() - dueNs) / 1000n)));
        completed++;
      }
    } catch {
      if (recording) errors++;
    }
  };

  const phase = async (seconds: number) => {
    const started = process.hrtime.bigint();
    const end = started + BigInt(Math.round(seconds * 1e9));
    if (spec.rate === 0) {
      await Promise.all(
        Array.from({ length: spec.connections }, async () => {
          while (process.hrtime.bigint() < end) await send(process.hrtime.bigint());
        }),
      );
      return;
    }
    // Every millisecond, send whatever is due by the schedule.
    const intervalNs = 1e9 / spec.rate;
    let sent = 0;
    const inFlight = new Set<Promise<void>>();
    while (true) {
      const now = process.hrtime.bigint();
      if (now >= end) break;
      const due = Math.floor(Number(now - started) / intervalNs);
      for (; sent < due; sent++) {
        const p = send(started + BigInt(Math.round(sent * intervalNs)));
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
      }
      await new Promise((r) => setTimeout(r, 1));
    }
    await Promise.all(inFlight);
  };

  await phase(spec.warmupS);
  recording = true;
  const t0 = process.hrtime.bigint();
  await phase(spec.durationS);
  const elapsedS = Number(process.hrtime.bigint() - t0) / 1e9;
  await pool.close();
  const ms = (p: number) => Math.round(histogram.getValueAtPercentile(p)) / 1000;
  return {
    requests: completed,
    errors,
    statuses,
    throughput: Math.round(completed / elapsedS),
    latencyMs: { p50: ms(50), p90: ms(90), p99: ms(99), p999: ms(99.9), max: Math.round(histogram.maxValue) / 1000 },
    histogram: hdr.encodeIntoCompressedBase64(histogram),
  };
}

/** Runs one load phase in a child process and resolves with what it measured. */
export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', SELF, JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as LoadResult) : reject(new Error(`load generator exited ${code}`))));
  });
}

if (process.argv[1] === SELF) {
  process.stdout.write(JSON.stringify(await generateLoad(JSON.parse(process.argv[2]!) as LoadSpec)));
}
