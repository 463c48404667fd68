/**
 * The HTTP load generator shared by the scenarios. It runs in child processes (this file, run
 * directly) so it does not share the event loop, and as far as the OS allows the core, of the
 * server under test. Each process drives its share of the connections over raw keep-alive
 * sockets (bench/lib/http1-connection.ts) with requests serialised once, which measured about
 * twice the ceiling of an undici Pool doing the same (docs/bench.md has the numbers).
 *
 * Two modes: closed loop (`rate: 0`, every connection sends its next request when the last one
 * returns: maximum throughput) and open loop at a fixed rate, where latency counts from when a
 * request was due, not when it was sent, so a stalled server is not hidden by a stalled client
 * (coordinated omission).
 */
import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { LatencySummary } from '../scenario.ts';
import { createHistogram, encodeHistogram, mergeHistograms, summarise } from './histogram.ts';
import { startDueTicker } from './due-ticker.ts';
import { Http1Connection, serialiseRequest } from './http1-connection.ts';
import { busyShare, readCpuCounters, readProcessCpuS } from './machine-cpu.ts';

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
   * a function giving each request's headers (added to `headers`), body and, for requests to
   * different resources, path (instead of `url`'s). The sequence number counts from 0 over the
   * warm-up and the measured phase of one generator process.
   */
  perRequest?: { module: string; options?: unknown };
  /** Generator processes sharing the connections and the rate (default `DEFAULT_PROCESSES`). */
  processes?: number;
  /** The process serving the target, whose CPU time the measured phase charges to its requests (`LoadResult.serverCpuUsPerRequest`). */
  serverPid?: number;
}

/** The default export of a `perRequest` module. */
export type PerRequestFactory = (options: unknown) => (seq: number, url: URL) => { headers?: Record<string, string>; body?: string; path?: string };

export interface LoadResult {
  requests: number;
  errors: number;
  statuses: Record<string, number>;
  throughput: number;
  latencyMs: LatencySummary;
  /** Compressed base64 HDR histogram of latencies in µs. */
  histogram: string;
  /** Open loop: requests still waiting for a free connection when the backlog's time ran out, not sent (counted in `errors`). */
  unsent?: number;
  /**
   * Open loop only: how late the generator itself sent requests that found a free connection,
   * after their due time. It is part of every latency above and says how much of it is ours.
   */
  scheduleLagMs?: LatencySummary;
  /**
   * The share of the machine's CPU time (all cores, every process) spent busy over the measured
   * phase, 0–1; absent where the kernel's counters cannot be read.
   */
  machineBusy?: number;
  /**
   * With `LoadSpec.serverPid`: the server's CPU time (user and system, every thread) over the
   * measured phase, and after it until the server went idle, divided by the requests it
   * answered, in µs; absent where `/proc/<pid>/stat` cannot be read.
   */
  serverCpuUsPerRequest?: number;
}

/** What one generator process measured; the parent adds the processes up. */
interface ShareResult {
  requests: number;
  errors: number;
  unsent: number;
  statuses: Record<string, number>;
  elapsedS: number;
  histogram: string;
  scheduleLag: string | null;
  /** The machine's busy share over the measured phase (bench/lib/machine-cpu.ts). */
  machineBusy: number | null;
  /** The server's CPU seconds over the measured phase, with `spec.serverPid`. */
  serverCpuS: number | null;
}

type ParentMessage = { kind: 'spec'; spec: LoadSpec } | { kind: 'go' };
type ChildMessage = { kind: 'ready' } | { kind: 'result'; result: ShareResult };

const SELF = fileURLToPath(import.meta.url);

/** Generator processes when a spec does not say: measured in docs/bench.md. */
export const DEFAULT_PROCESSES = 1;

/** The longest a phase waits after its end for a backlog to be served, and then again for answers in flight. */
const DRAIN_S = 10;

async function requestSource(spec: LoadSpec, url: URL): Promise<() => Buffer> {
  const method = spec.method ?? 'POST';
  const path = url.pathname + url.search;
  if (!spec.perRequest) {
    const fixed = serialiseRequest(method, path, url.host, spec.headers, spec.body);
    return () => fixed;
  }
  const factory = ((await import(spec.perRequest.module)) as { default: PerRequestFactory }).default;
  const next = factory(spec.perRequest.options);
  let seq = 0;
  return () => {
    const varying = next(seq++, url);
    const headers = varying.headers ? { ...spec.headers, ...varying.headers } : spec.headers;
    return serialiseRequest(method, varying.path ?? path, url.host, headers, varying.body ?? spec.body);
  };
}

/**
 * One process's share of the load: `spec.connections` connections at `spec.rate`. `prepared` is
 * awaited once everything is set up, and resolves when every process may start.
 */
async function generateShare(spec: LoadSpec, prepared: () => Promise<void>): Promise<ShareResult> {
  const url = new URL(spec.url);
  const nextRequest = await requestSource(spec, url);
  const histogram = createHistogram();
  const scheduleLag = createHistogram();
  const statuses: Record<string, number> = {};
  let errors = 0;
  let unsent = 0;
  let completed = 0;
  let recording = false;

  /** A connection with the due time (performance.now() ms) of its request in flight. */
  interface Slot {
    connection: Http1Connection;
    due: number;
  }
  const idle: Slot[] = [];
  /** Open loop: due times of requests waiting for a free connection, oldest first. */
  let waiting: number[] = [];
  let waitingHead = 0;
  let phaseEnd = 0;
  let phaseOpen = false;
  let onIdle: (() => void) | null = null;
  let dispatch: () => void = () => {};

  const finish = (slot: Slot, status: number | null) => {
    if (recording) {
      if (status === null) errors++;
      else {
        statuses[status] = (statuses[status] ?? 0) + 1;
        histogram.recordValue(Math.max(1, Math.round((performance.now() - slot.due) * 1000)));
        completed++;
      }
    }
    if (spec.rate === 0) {
      const now = performance.now();
      if (phaseOpen && now < phaseEnd) return send(slot, now);
    } else {
      dispatch();
      if (waitingHead < waiting.length) return send(slot, waiting[waitingHead++]!);
    }
    idle.push(slot);
    if (idle.length === spec.connections) onIdle?.();
  };
  const send = (slot: Slot, due: number) => {
    slot.due = due;
    slot.connection.send(nextRequest());
  };
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(url.port || 80);
  for (let i = 0; i < spec.connections; i++) {
    const slot: Slot = { due: 0, connection: new Http1Connection(host, port, { onResponse: (status) => finish(slot, status), onError: () => finish(slot, null) }) };
    idle.push(slot);
  }
  /** Whether every connection went idle within `ms`. */
  const idleWithin = (ms: number) =>
    new Promise<boolean>((resolve) => {
      if (idle.length === spec.connections) return resolve(true);
      const timer = setTimeout(() => resolve(false), ms);
      onIdle = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });

  /** Runs one phase; resolves with when it started (performance.now() ms). */
  const phase = async (seconds: number): Promise<number> => {
    const durationMs = seconds * 1000;
    phaseOpen = true;
    if (spec.rate === 0) {
      phaseEnd = performance.now() + durationMs;
      for (const slot of idle.splice(0)) send(slot, performance.now());
      await new Promise((resolve) => setTimeout(resolve, durationMs));
    } else {
      const intervalMs = 1000 / spec.rate;
      const total = Math.ceil(durationMs / intervalMs);
      let sent = 0;
      let start = 0;
      waiting = [];
      waitingHead = 0;
      // Requests go out when due: on the ticker's wake-ups, and after every response (at high
      // rates that is often, and free).
      const due = () => {
        const now = performance.now();
        const dueNow = Math.min(Math.floor((now - start) / intervalMs) + 1, total);
        for (; sent < dueNow; sent++) {
          const dueAt = start + sent * intervalMs;
          const slot = idle.pop();
          if (slot) {
            if (recording) scheduleLag.recordValue(Math.max(1, Math.round((now - dueAt) * 1000)));
            send(slot, dueAt);
          } else waiting.push(dueAt);
        }
      };
      const ticker = await startDueTicker(intervalMs, durationMs, () => dispatch());
      start = ticker.start;
      phaseEnd = start + durationMs;
      dispatch = due;
      dispatch();
      await new Promise((resolve) => setTimeout(resolve, phaseEnd - performance.now()));
      dispatch();
      await ticker.stop();
      dispatch = () => {};
    }
    phaseOpen = false;
    // Requests still waiting for a connection are served, their latency counting from their due
    // time, for as long as the phase itself lasted (10 s at most). What is left then is not
    // sent: a server far below the rate would keep the run going for many times its length.
    // Those count as errors, so a saturated server shows as such, not only as a long tail.
    if (!(await idleWithin(Math.min(DRAIN_S * 1000, Math.max(1000, durationMs))))) {
      if (recording) unsent += waiting.length - waitingHead;
      waiting = [];
      waitingHead = 0;
      if (!(await idleWithin(DRAIN_S * 1000))) {
        throw new Error(`load: ${spec.connections - idle.length} requests still unanswered ${DRAIN_S} s after the phase ended`);
      }
    }
    onIdle = null;
    return phaseEnd - durationMs;
  };

  await prepared();
  await phase(spec.warmupS);
  recording = true;
  const counters = readCpuCounters();
  const serverCpuBefore = spec.serverPid === undefined ? null : readProcessCpuS(spec.serverPid);
  const t0 = await phase(spec.durationS);
  const machineBusy = busyShare(counters, readCpuCounters());
  const serverCpuAfter = serverCpuBefore === null ? null : await settledCpuS(spec.serverPid!);
  const elapsedS = (performance.now() - t0) / 1000;
  for (const slot of idle) slot.connection.close();
  return {
    requests: completed,
    errors: errors + unsent,
    unsent,
    statuses,
    elapsedS,
    histogram: encodeHistogram(histogram),
    scheduleLag: spec.rate > 0 && scheduleLag.totalCount > 0 ? encodeHistogram(scheduleLag) : null,
    machineBusy,
    serverCpuS: serverCpuBefore === null || serverCpuAfter === null ? null : serverCpuAfter - serverCpuBefore,
  };
}

/**
 * Process `pid`'s CPU seconds once it has gone idle: work a server puts off until after it
 * answers (indexing, fan-out, batched writes) is part of what the requests cost. Read every
 * 50 ms until a reading shows no new clock tick, 1 s at most.
 */
async function settledCpuS(pid: number): Promise<number | null> {
  let last = readProcessCpuS(pid);
  for (let waitedMs = 0; last !== null && waitedMs < 1000; waitedMs += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const now = readProcessCpuS(pid);
    if (now === last) break;
    last = now;
  }
  return last;
}

/** Splits `total` into `parts` near-equal shares. */
function split(total: number, parts: number, index: number): number {
  return Math.floor(total / parts) + (index < total % parts ? 1 : 0);
}

function runShare(spec: LoadSpec, go: Promise<void>, ready: () => void): Promise<ShareResult> {
  return new Promise((resolve, reject) => {
    const child = fork(SELF, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let result: ShareResult | null = null;
    child.on('message', (message: ChildMessage) => {
      if (message.kind === 'ready') {
        ready();
        void go.then(() => child.send({ kind: 'go' } satisfies ParentMessage));
      } else result = message.result;
    });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 && result ? resolve(result) : reject(new Error(`load generator exited ${code}`))));
    child.send({ kind: 'spec', spec } satisfies ParentMessage);
  });
}

/** Runs one load phase in child processes and resolves with what they measured together. */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const processes = Math.max(1, Math.min(spec.processes ?? DEFAULT_PROCESSES, spec.connections));
  // Every process starts loading at once, when all are up, so their measured phases overlap.
  let readyCount = 0;
  let go!: () => void;
  const started = new Promise<void>((resolve) => (go = resolve));
  const shares = await Promise.all(
    Array.from({ length: processes }, (_, i) =>
      runShare({ ...spec, processes: 1, connections: split(spec.connections, processes, i), rate: spec.rate / processes }, started, () => {
        if (++readyCount === processes) go();
      }),
    ),
  );
  const histogram = mergeHistograms(shares.map((s) => s.histogram));
  const lags = shares.flatMap((s) => (s.scheduleLag ? [s.scheduleLag] : []));
  const statuses: Record<string, number> = {};
  const busy = shares.flatMap((s) => (s.machineBusy === null ? [] : [s.machineBusy]));
  const serverCpu = shares.flatMap((s) => (s.serverCpuS === null ? [] : [s.serverCpuS]));
  const requests = shares.reduce((n, s) => n + s.requests, 0);
  for (const share of shares) for (const [status, n] of Object.entries(share.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
  return {
    requests,
    errors: shares.reduce((n, s) => n + s.errors, 0),
    ...(spec.rate > 0 ? { unsent: shares.reduce((n, s) => n + s.unsent, 0) } : {}),
    statuses,
    throughput: Math.round(shares.reduce((n, s) => n + s.requests / s.elapsedS, 0)),
    latencyMs: summarise(histogram),
    histogram: encodeHistogram(histogram),
    ...(lags.length > 0 ? { scheduleLagMs: summarise(mergeHistograms(lags)) } : {}),
    // Every process read the same machine over the same phase: their mean.
    ...(busy.length > 0 ? { machineBusy: Math.round((busy.reduce((a, b) => a + b, 0) / busy.length) * 1000) / 1000 } : {}),
    // Every process read the same server over nearly the same phase: the widest reading covers them all.
    ...(serverCpu.length > 0 && requests > 0 ? { serverCpuUsPerRequest: Math.round((Math.max(...serverCpu) / requests) * 1e7) / 10 } : {}),
  };
}

if (process.argv[1] === SELF && process.send) {
  const send = (message: ChildMessage) => new Promise<void>((resolve) => process.send!(message, () => resolve()));
  let go!: () => void;
  const started = new Promise<void>((resolve) => (go = resolve));
  process.on('message', (message: ParentMessage) => {
    if (message.kind === 'go') return go();
    const prepared = () => send({ kind: 'ready' }).then(() => started);
    void generateShare(message.spec, prepared).then(
      async (result) => {
        await send({ kind: 'result', result });
        process.disconnect();
      },
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
}
