/**
 * One keep-alive HTTP/1.1 client connection on a raw `net` socket, as lean as a load generator
 * needs: requests are written as ready-made bytes, and responses are parsed only as far as finding
 * the status code and where the body ends (Content-Length or chunked). Nothing is decoded, no
 * header object is built. One request in flight at a time (no pipelining), like a browser or an
 * HTTP client pool.
 */
import { connect, type Socket } from 'node:net';

const CRLFCRLF = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');

/** Serialises one request: method, path, headers (names as given) and an optional body. */
export function serialiseRequest(method: string, path: string, host: string, headers: Record<string, string>, body: string | undefined): Buffer {
  const payload = body === undefined ? null : Buffer.from(body);
  let head = `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\n`;
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  if (payload) head += `content-length: ${payload.length}\r\n`;
  head += '\r\n';
  return payload ? Buffer.concat([Buffer.from(head, 'latin1'), payload]) : Buffer.from(head, 'latin1');
}

type ParseState =
  | { kind: 'head' }
  | { kind: 'length'; remaining: number }
  | { kind: 'chunk-size' }
  | { kind: 'chunk-data'; remaining: number }
  | { kind: 'trailers' };

export interface ConnectionEvents {
  /** A whole response arrived for the request in flight. */
  onResponse(status: number): void;
  /** The request in flight failed (connection reset, closed, or an unparseable response). */
  onError(): void;
}

export class Http1Connection {
  private socket: Socket | null = null;
  private pending: Buffer | null = null;
  private state: ParseState = { kind: 'head' };
  private status = 0;
  private inFlight = false;
  private closed = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly events: ConnectionEvents,
  ) {}

  /** Sends one request; the answer comes through `events`. Reconnects if the server closed the connection. */
  send(request: Buffer): void {
    this.inFlight = true;
    if (!this.socket) this.socket = this.open();
    this.socket.write(request);
  }

  close(): void {
    this.closed = true;
    this.socket?.destroy();
    this.socket = null;
  }

  private open(): Socket {
    const socket = connect({ host: this.host, port: this.port, noDelay: true });
    socket.on('data', (chunk) => this.receive(chunk));
    const lost = () => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.pending = null;
      this.state = { kind: 'head' };
      if (this.inFlight && !this.closed) {
        this.inFlight = false;
        this.events.onError();
      }
    };
    socket.on('error', lost);
    socket.on('close', lost);
    return socket;
  }

  private receive(chunk: Buffer): void {
    let data = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = null;
    while (data.length > 0) {
      const consumed = this.parse(data);
      if (consumed < 0) {
        // Not enough bytes to make progress: keep them for the next chunk.
        this.pending = data;
        return;
      }
      data = data.subarray(consumed);
    }
  }

  /** Advances the parser over `data`; returns the bytes consumed, or -1 when more are needed. */
  private parse(data: Buffer): number {
    const state = this.state;
    switch (state.kind) {
      case 'head': {
        const end = data.indexOf(CRLFCRLF);
        if (end < 0) return -1;
        // "HTTP/1.1 200 OK": the status code is always bytes 9–11.
        this.status = (data[9]! - 48) * 100 + (data[10]! - 48) * 10 + (data[11]! - 48);
        const head = data.toString('latin1', 0, end).toLowerCase();
        const length = /\r\ncontent-length:\s*(\d+)/.exec(head);
        if (length) this.state = { kind: 'length', remaining: Number(length[1]) };
        else if (/\r\ntransfer-encoding:[^\r]*chunked/.test(head)) this.state = { kind: 'chunk-size' };
        else this.state = { kind: 'length', remaining: 0 };
        if (this.state.kind === 'length' && this.state.remaining === 0) this.complete();
        return end + 4;
      }
      case 'length': {
        const take = Math.min(state.remaining, data.length);
        state.remaining -= take;
        if (state.remaining === 0) this.complete();
        return take;
      }
      case 'chunk-size': {
        const end = data.indexOf(CRLF);
        if (end < 0) return -1;
        const size = parseInt(data.toString('latin1', 0, end), 16);
        if (Number.isNaN(size)) return this.fail(data.length);
        // Each chunk's data is followed by CRLF, counted into what to skip.
        this.state = size === 0 ? { kind: 'trailers' } : { kind: 'chunk-data', remaining: size + 2 };
        return end + 2;
      }
      case 'chunk-data': {
        const take = Math.min(state.remaining, data.length);
        state.remaining -= take;
        if (state.remaining === 0) this.state = { kind: 'chunk-size' };
        return take;
      }
      case 'trailers': {
        const end = data.indexOf(CRLF);
        if (end < 0) return -1;
        // An empty line ends the trailers, and the response.
        if (end === 0) this.complete();
        return end + 2;
      }
    }
  }

  private complete(): void {
    this.state = { kind: 'head' };
    this.inFlight = false;
    this.events.onResponse(this.status);
  }

  /** Drops the connection on a response it cannot parse; closing it reports the error. */
  private fail(bytes: number): number {
    this.socket?.destroy();
    return bytes;
  }
}
