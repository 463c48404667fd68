import { Worker } from 'node:worker_threads';
import type { ThreadGroup } from '../core/threads/thread-group.ts';
import { log } from '../core/log.ts';
import type { ServeSettings } from './commands/serve.ts';

/**
 * The worker threads of `gatehouse serve --threads N` (docs/api.md, *Threads*): threads
 * 1 … N-1, each running the API on the port thread 0 (the main thread) listens on, over the same
 * data directory. A worker that cannot start, or stops unasked, stops the whole process: a
 * sidecar serving with fewer threads than configured would hide the fault.
 */
export interface ThreadWorkers {
  /** Drains and closes every worker's server; resolves once they have exited. */
  close(): Promise<void>;
  /** Resolves, with why, if a worker stops without being asked. */
  readonly failed: Promise<Error>;
}

/** What thread 0 sends a worker to start it (its `workerData`). */
export interface WorkerStart {
  settings: ServeSettings;
  group: ThreadGroup['memory'];
  index: number;
}

/** What a worker tells thread 0. */
export type WorkerReport = { kind: 'ready' } | { kind: 'failed'; message: string };

/**
 * The worker's module: its TypeScript source in a checkout, which the worker can load only once
 * it has registered the TypeScript loader itself (Node 20 does not pass a thread's module hooks
 * on to its workers); the compiled file in the package.
 */
const FROM_SOURCE = import.meta.url.endsWith('.ts');
const ENTRY = new URL(FROM_SOURCE ? './thread-worker.ts' : './thread-worker.js', import.meta.url);
const EXEC_ARGV = FROM_SOURCE ? [...process.execArgv, '--import', new URL('../scripts/register-typescript.js', import.meta.url).href] : process.execArgv;

/** How long a worker may take to start (compiling policies absent from the cache included). */
const START_TIMEOUT_MS = 120_000;

export async function startThreadWorkers(settings: ServeSettings, group: ThreadGroup): Promise<ThreadWorkers> {
  const workers: Worker[] = [];
  let closing = false;
  let fail!: (error: Error) => void;
  const failed = new Promise<Error>((resolve) => (fail = resolve));
  const close = async () => {
    closing = true;
    await Promise.all(workers.map((worker) => stop(worker)));
  };
  try {
    for (let index = 1; index < group.size; index++) {
      const start: WorkerStart = { settings: { ...settings, embedder: undefined }, group: group.memory, index };
      const worker = new Worker(ENTRY, { workerData: start, name: `gatehouse-thread-${index}`, execArgv: EXEC_ARGV });
      workers.push(worker);
      await started(worker, index);
      worker.once('exit', (code) => {
        if (!closing) fail(new Error(`thread ${index} stopped (exit code ${code})`));
      });
      worker.on('error', (error) => log.error({ thread: index, err: error }, 'a thread failed'));
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { close, failed };
}

function started(worker: Worker, index: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`thread ${index} did not start within ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
    const settle = (error: Error | null) => {
      clearTimeout(timer);
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
      if (error) reject(error);
      else resolve();
    };
    const onMessage = (report: WorkerReport) => {
      if (report.kind === 'ready') settle(null);
      else if (report.kind === 'failed') settle(new Error(`thread ${index} could not start: ${report.message}`));
    };
    const onError = (error: Error) => settle(new Error(`thread ${index} could not start: ${error.message}`));
    const onExit = (code: number) => settle(new Error(`thread ${index} exited (code ${code}) before it started`));
    worker.on('message', onMessage);
    worker.once('error', onError);
    worker.once('exit', onExit);
  });
}

/** Asks a worker to drain and close, and waits for it to exit (terminating it if it does not within a minute). */
async function stop(worker: Worker): Promise<void> {
  if (worker.threadId === -1) return;
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.postMessage('close');
  const timer = setTimeout(() => void worker.terminate(), 60_000);
  await exited;
  clearTimeout(timer);
}
