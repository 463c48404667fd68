/**
 * A subscription to `WS /v1/streaming` (docs/streaming.md) as an async iterator of events that
 * survives reconnects: it remembers the last cursor it saw and subscribes again with `since`, so
 * after a server restart (1001), a slow-consumer close (4008) or a dropped connection nothing is
 * missed and nothing comes twice.
 */
export interface StreamEvent {
  type: 'event';
  cursor: number;
  id: string;
  kind: string;
  topic: string;
  time: string;
  data: unknown;
}

/** The parts of the WebSocket API the subscription uses: the browser's, undici's and `ws`'s. */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number): void;
  addEventListener(type: 'open' | 'message' | 'close' | 'error', listener: (event: any) => void): void;
}
export type WebSocketConstructor = new (url: string, init?: { headers: Record<string, string> }) => WebSocketLike;

export interface SubscribeOptions {
  topics: string[];
  /** Resume after this cursor (the last one processed). */
  since?: number;
  /** Node 20 has no global WebSocket: pass `ws`'s (or undici's). Browsers use theirs. */
  WebSocket?: WebSocketConstructor;
  /** Reconnects in a row that may fail before the iterator throws (default 5). */
  reconnects?: number;
  /** First delay before reconnecting, doubled each failure in a row (default 200 ms). */
  reconnectDelayMs?: number;
  signal?: AbortSignal;
}

/** The server refused a subscribe (`unknown_topic`, `insufficient_scope`, `cursor_expired`, …). */
export class StreamSubscriptionError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(`${code}: ${message}`);
    this.name = 'StreamSubscriptionError';
  }
}

/** The stream could not be (re)opened: a refused upgrade (401, 403) or an unreachable server. */
export class StreamClosedError extends Error {
  constructor(readonly closeCode: number) {
    super(`the stream closed (${closeCode}) and could not be reopened`);
    this.name = 'StreamClosedError';
  }
}

type Received = { type: 'message'; message: any } | { type: 'closed'; code: number };

/** One connection's messages, in order, ending with its close. */
function connect(url: string, headers: Record<string, string> | null, Socket: WebSocketConstructor): { socket: WebSocketLike; next(): Promise<Received> } {
  const socket = headers ? new Socket(url, { headers }) : new Socket(url);
  const queue: Received[] = [];
  let wake: (() => void) | null = null;
  const push = (item: Received) => {
    queue.push(item);
    wake?.();
  };
  socket.addEventListener('message', (event) => push({ type: 'message', message: JSON.parse(String(event.data)) }));
  socket.addEventListener('close', (event) => push({ type: 'closed', code: event.code }));
  return {
    socket,
    async next() {
      while (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      wake = null;
      return queue.shift()!;
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function* subscribe(url: string, headers: Record<string, string> | null, options: SubscribeOptions): AsyncGenerator<StreamEvent> {
  const Socket = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (!Socket) throw new TypeError('no WebSocket implementation: pass options.WebSocket (e.g. the `ws` package) on Node 20');
  const reconnects = options.reconnects ?? 5;
  const delay = options.reconnectDelayMs ?? 200;
  let since = options.since;
  let failures = 0;
  while (!options.signal?.aborted) {
    const connection = connect(url, headers, Socket);
    connection.socket.addEventListener('open', () =>
      connection.socket.send(JSON.stringify({ type: 'subscribe', topics: options.topics, ...(since === undefined ? {} : { since }) })),
    );
    const abort = () => connection.socket.close(1000);
    options.signal?.addEventListener('abort', abort);
    try {
      for (;;) {
        const received = await connection.next();
        if (received.type === 'closed') {
          if (options.signal?.aborted) return;
          if (++failures > reconnects) throw new StreamClosedError(received.code);
          break;
        }
        const { message } = received;
        if (message.type === 'event') {
          since = message.cursor;
          yield message as StreamEvent;
        } else if (message.type === 'subscribed') {
          failures = 0;
          since = Math.max(since ?? 0, message.cursor);
        } else if (message.type === 'error') {
          throw new StreamSubscriptionError(message.code, message.message);
        }
      }
    } finally {
      options.signal?.removeEventListener('abort', abort);
      if (connection.socket.readyState <= 1) connection.socket.close(1000);
    }
    await sleep(delay * 2 ** (failures - 1));
  }
}
