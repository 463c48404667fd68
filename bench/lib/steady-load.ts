/**
 * A steady open-loop load kept up while something else happens (the `cluster` scenario kills NATS
 * servers under it), recording every request: when it was due, when it completed and with which
 * status. `bench/lib/load.ts` measures fixed phases into histograms and cannot say *when* writes
 * stopped succeeding; this can, so the longest stretch without a successful write is measured
 * from the requests themselves.
 *
 * It runs in the calling process, driving raw keep-alive connections (bench/lib/http1-connection.ts)
 * on the due ticker's schedule (bench/lib/due-ticker.ts); request `i` goes to URL `i mod n`, so the
 * load is split evenly between the servers. A request that finds all of its URL's connections
 * busy waits for one, in order. Times are `performance.now()` milliseconds of this process.
 */
import { performance } from 'node:perf_hooks';
import { startDueTicker, type DueTicker } from './due-ticker.ts';
import { Http1Connection, serialiseRequest } from './http1-connection.ts';

export interface SteadyLoadSpec {
  urls: string[];
  method?: string;
  headers: Record<string, string>;
  body?: string;
  /** Requests per second, all URLs together. */
  rate: number;
  connectionsPerUrl: number;
}

/** One request that completed. */
export interface Completion {
  /** Index of its URL in `SteadyLoadSpec.urls`. */
  target: number;
  /** When it was due to be sent. */
  due: number;
  /** When its answer (or its failure) arrived. */
  at: number;
  /** The HTTP status, null when the connection failed. */
  status: number | null;
}

export interface SteadyLoad {
  /** Every request completed so far, in completion order (so `at` never decreases). */
  readonly completions: readonly Completion[];
  /** Stops sending, waits (10 s at most) for the requests in flight, and resolves with every completion. */
  stop(): Promise<Completion[]>;
}

/** The longest a steady load may run: the ticker's schedule has to have an end. */
const MAX_DURATION_MS = 3_600_000;
const DRAIN_MS = 10_000;

/** One connection of a lane (a URL's connections) with the due time of its request in flight. */
interface Slot {
  connection: Http1Connection;
  due: number;
}

interface Lane {
  request: Buffer;
  idle: Slot[];
  /** Due times of requests waiting for a free connection, oldest first from `waitingHead`. */
  waiting: number[];
  waitingHead: number;
  inFlight: number;
}

/** Starts sending at once; `stop()` ends it. */
export async function startSteadyLoad(spec: SteadyLoadSpec): Promise<SteadyLoad> {
  const completions: Completion[] = [];
  const intervalMs = 1000 / spec.rate;
  let stopping = false;
  let drained: (() => void) | null = null;
  const slots: Slot[] = [];

  const send = (lane: Lane, slot: Slot, due: number) => {
    slot.due = due;
    lane.inFlight++;
    slot.connection.send(lane.request);
  };
  const finish = (lane: Lane, target: number, slot: Slot, status: number | null) => {
    completions.push({ target, due: slot.due, at: performance.now(), status });
    lane.inFlight--;
    if (!stopping && lane.waitingHead < lane.waiting.length) return send(lane, slot, lane.waiting[lane.waitingHead++]!);
    lane.idle.push(slot);
    if (stopping && lanes.every((l) => l.inFlight === 0)) drained?.();
  };
  const lanes = spec.urls.map((raw, target): Lane => {
    const url = new URL(raw);
    const lane: Lane = { request: serialiseRequest(spec.method ?? 'POST', url.pathname + url.search, url.host, spec.headers, spec.body), idle: [], waiting: [], waitingHead: 0, inFlight: 0 };
    for (let i = 0; i < spec.connectionsPerUrl; i++) {
      const slot: Slot = {
        due: 0,
        connection: new Http1Connection(url.hostname, Number(url.port || 80), {
          onResponse: (status) => finish(lane, target, slot, status),
          onError: () => finish(lane, target, slot, null),
        }),
      };
      lane.idle.push(slot);
      slots.push(slot);
    }
    return lane;
  });

  let sent = 0;
  let ticker: DueTicker | null = null;
  const dispatch = () => {
    if (stopping || !ticker) return;
    const dueNow = Math.floor((performance.now() - ticker.start) / intervalMs) + 1;
    for (; sent < dueNow; sent++) {
      const lane = lanes[sent % lanes.length]!;
      const due = ticker.start + sent * intervalMs;
      const slot = lane.idle.pop();
      if (slot) send(lane, slot, due);
      else lane.waiting.push(due);
    }
  };
  const schedule = await startDueTicker(intervalMs, MAX_DURATION_MS, dispatch);
  ticker = schedule;
  dispatch();

  return {
    completions,
    async stop() {
      // Requests still waiting for a connection are never sent; those in flight are waited for.
      stopping = true;
      await schedule.stop();
      if (lanes.some((lane) => lane.inFlight > 0)) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, DRAIN_MS);
          drained = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      for (const slot of slots) slot.connection.close();
      return completions;
    },
  };
}

/** The longest stretch without a successful write around an event, and where it lay. */
export interface SuccessGap {
  /** Milliseconds between two successive 2xx completions. */
  gapMs: number;
  /** When the stretch began: the last success before it. */
  from: number;
  /** False when no success followed before `until`: the gap is then at least `gapMs`. */
  closed: boolean;
}

/**
 * The longest time between two successive 2xx completions among `completions` (in completion
 * order) where the later one came after `after` and the earlier one before `until`: the stall an
 * event at `after` caused (and anything else until `until`), counted from the last success before
 * it. With `target`, only the requests to that URL count: how long one server went without a write.
 */
export function longestSuccessGap(completions: readonly Completion[], after: number, until: number, target?: number): SuccessGap {
  let previous: number | null = null;
  let longest: SuccessGap = { gapMs: 0, from: after, closed: true };
  for (const completion of completions) {
    if (!succeeded(completion) || (target !== undefined && completion.target !== target)) continue;
    if (completion.at > after && previous !== null && completion.at - previous > longest.gapMs) {
      longest = { gapMs: completion.at - previous, from: previous, closed: true };
    }
    // The pair straddling `until` counted: its stretch began inside the window.
    if (completion.at > until) return longest;
    previous = completion.at;
  }
  // No success after `until` yet: the stretch since the last one is still going on.
  const since = previous ?? after;
  return until - since > longest.gapMs ? { gapMs: until - since, from: since, closed: false } : longest;
}

/** Whether the request completed with a 2xx answer. */
export function succeeded(completion: Completion): boolean {
  return completion.status !== null && completion.status >= 200 && completion.status <= 299;
}
