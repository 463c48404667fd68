import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A webhook receiver on 127.0.0.1 and an ephemeral port. It records every request with the
 * status it answered; `respond` chooses that status (by the request's number, from 1), so a test
 * can make it fail and recover.
 */
export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

export interface Receiver {
  url: string;
  received: Received[];
  respond: (n: number, body: string) => number;
  /** Resolves once `done` holds, checked on every request; rejects after `timeoutMs`. */
  waitFor(done: (received: Received[]) => boolean, timeoutMs?: number): Promise<void>;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

export async function startReceiver(t: Teardown, respond: (n: number, body: string) => number = () => 200, port = 0): Promise<Receiver> {
  const waiters = new Set<() => void>();
  const receiver: Receiver = {
    url: '',
    received: [],
    respond,
    waitFor(done, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!done(receiver.received)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`the receiver did not get what was expected within ${timeoutMs} ms; it got ${receiver.received.length} requests`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const status = receiver.respond(receiver.received.length + 1, body);
      receiver.received.push({ headers: req.headers, body, status });
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'thanks' : `failing on purpose (${status})`);
      for (const wake of [...waiters]) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  t.teardown(() => {
    // The sidecar keeps connections alive; close them so `close` need not wait for them.
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return receiver;
}
