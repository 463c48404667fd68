/**
 * A port of 127.0.0.1 free a moment ago, for servers in other processes that must be told where to
 * listen (nginx, Cerbos): one another process takes in between fails to start, and says so.
 */
import { createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
