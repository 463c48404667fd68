import { parentPort, workerData } from 'node:worker_threads';
import { httpEmbedderFromEnv } from '../core/memory/http-embedder.ts';
import { ThreadGroup } from '../core/threads/thread-group.ts';
import { startThread } from './commands/serve.ts';
import type { WorkerReport, WorkerStart } from './thread-workers.ts';

/**
 * One worker thread of `gatehouse serve --threads N` (cli/thread-workers.ts): starts the API over
 * the settings thread 0 parsed, reports ready, and drains and closes when thread 0 says `close`.
 */
const { settings, group, index } = workerData as WorkerStart;
const port = parentPort!;
const report = (message: WorkerReport) => port.postMessage(message);
const threads = ThreadGroup.join(group, index);
try {
  const { server, engine } = await startThread({ ...settings, embedder: httpEmbedderFromEnv(process.env) }, threads);
  port.once('message', () => {
    void (async () => {
      await server.close();
      await engine.close();
      threads.close();
      port.close();
    })();
  });
  report({ kind: 'ready' });
} catch (error) {
  report({ kind: 'failed', message: (error as Error).message });
  threads.close();
  port.close();
}
