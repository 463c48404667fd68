import WebSocket from 'ws';

/**
 * A real `ws` client for `WS /v1/streaming` that keeps every server message in order and lets a
 * test wait, with a bound, for the one it expects.
 */
export interface StreamMessage {
  type: string;
  [field: string]: any;
}

export interface StreamClient {
  ws: WebSocket;
  messages: StreamMessage[];
  send(message: unknown): void;
  /** The first message at or after `from` (an index into `messages`) that `match` accepts. */
  next(match: (m: StreamMessage) => boolean, timeoutMs?: number, from?: number): Promise<StreamMessage>;
  /** Resolves with the close code and reason. */
  closed: Promise<{ code: number; reason: string }>;
  close(): Promise<void>;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

export function wsUrl(httpUrl: string): string {
  return `${httpUrl.replace(/^http/, 'ws')}/v1/streaming`;
}

/** Opens a stream with `key`; rejects with the HTTP status when the upgrade is refused. */
export function openStream(t: Teardown, httpUrl: string, key: string | null): Promise<StreamClient> {
  const ws = new WebSocket(wsUrl(httpUrl), key ? { headers: { authorization: `Bearer ${key}` } } : {});
  const messages: StreamMessage[] = [];
  const waiters = new Set<() => void>();
  ws.on('message', (data, isBinary) => {
    if (!isBinary) messages.push(JSON.parse(data.toString()));
    for (const wake of waiters) wake();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code, reason) => {
      resolve({ code, reason: reason.toString() });
      for (const wake of waiters) wake();
    }),
  );
  t.teardown(() => ws.terminate());
  const client: StreamClient = {
    ws,
    messages,
    closed,
    send: (message) => ws.send(typeof message === 'string' ? message : JSON.stringify(message)),
    next(match, timeoutMs = 10_000, from = 0) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = messages.slice(from).find(match);
          if (!found && ws.readyState !== WebSocket.CLOSED) return;
          waiters.delete(check);
          clearTimeout(timer);
          if (found) resolve(found);
          else reject(new Error(`the stream closed before the expected message; got ${JSON.stringify(messages.slice(from))}`));
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching message within ${timeoutMs} ms; got ${JSON.stringify(messages.slice(from))}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    async close() {
      ws.close();
      await closed;
    },
  };
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(client));
    ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode })));
    ws.once('error', reject);
  });
}
