/**
 * The load generator's own ceiling: maximum throughput against a raw uWebSockets.js handler that
 * does nothing. No HTTP scenario can show more than this, so every run reports it; a Gatehouse
 * figure near it says more about the generator than about Gatehouse.
 */
import { startRawUws } from './baseline-servers.ts';
import { runLoad, type LoadResult } from './load.ts';

/** Closed loop against an in-process raw uWS handler answering a small JSON body. */
export async function measureGeneratorCeiling(options: { durationS: number; warmupS: number; connections: number }): Promise<LoadResult> {
  const server = await startRawUws('{"ok":true}');
  try {
    return await runLoad({ url: `${server.origin}/`, method: 'GET', headers: {}, rate: 0, ...options });
  } finally {
    await server.close();
  }
}
