/**
 * Wakes the load generator's event loop when each request of an open-loop schedule is due.
 * Node's timers have millisecond granularity: with `setInterval(…, 1)` requests left on
 * average half a millisecond late, and that lateness was part of every latency recorded. A
 * worker thread instead sleeps until each due time on a futex (`Atomics.wait`, sub-millisecond
 * timeouts) and posts a message, which the event loop handles as soon as it is idle.
 */
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';

// Plain JavaScript, evaluated by the worker without a loader. It waits for the schedule's start
// in shared memory, so the schedule starts only once the thread is up. Times are absolute
// (timeOrigin + now): each thread has its own performance.timeOrigin.
const TICKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { shared, intervalMs, durationMs } = workerData;
const flag = new Int32Array(shared, 0, 1);
Atomics.wait(flag, 0, 0);
const startMs = new Float64Array(shared, 8, 1)[0];
const endMs = startMs + durationMs;
const now = () => performance.timeOrigin + performance.now();
let next = 0;
for (;;) {
  const due = startMs + next * intervalMs;
  if (due > endMs) break;
  const wait = due - now();
  if (wait > 0) Atomics.wait(flag, 0, 1, wait);
  parentPort.postMessage(0);
  // One tick releases everything due by now; skip to the first request still ahead.
  next = Math.max(next + 1, Math.floor((now() - startMs) / intervalMs) + 1);
}
`;

export interface DueTicker {
  /** When the schedule started, in this thread's `performance.now()` milliseconds. */
  start: number;
  stop(): Promise<void>;
}

/**
 * Starts a schedule of one tick every `intervalMs` for `durationMs`, calling `onTick` at each
 * due time. The schedule starts when the worker is ready, at the returned `start`.
 */
export async function startDueTicker(intervalMs: number, durationMs: number, onTick: () => void): Promise<DueTicker> {
  const shared = new SharedArrayBuffer(16);
  const worker = new Worker(TICKER_SOURCE, { eval: true, workerData: { shared, intervalMs, durationMs } });
  worker.on('message', () => onTick());
  await once(worker, 'online');
  const start = performance.now();
  new Float64Array(shared, 8, 1)[0] = performance.timeOrigin + start;
  const flag = new Int32Array(shared, 0, 1);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
  return {
    start,
    stop: async () => {
      worker.removeAllListeners('message');
      await worker.terminate();
    },
  };
}
