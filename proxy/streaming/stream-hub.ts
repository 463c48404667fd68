import type { HttpRequest, HttpResponse, TemplatedApp, us_socket_context_t, WebSocket, WebSocketBehavior } from 'uWebSockets.js';
import type { EventLog } from '../../core/events/event-log.ts';
import type { Principal } from '../../core/principal.ts';
import type { Metrics } from '../metrics.ts';
import { CLOSE, heartbeatMessage } from './protocol.ts';
import { Publisher } from './publisher.ts';
import { Session, type StreamSocketData } from './session.ts';

/**
 * `WS /v1/streaming` on uWebSockets.js: the connections, their heartbeat, and the bound on how
 * far behind a subscriber may fall. The upgrade itself goes through the request pipeline
 * (authentication, rate limit, audit) in proxy/server.ts; this module takes over once the
 * connection is open.
 *
 * Slow consumers: a connection whose unsent backlog passes `maxBackpressureBytes` is closed with
 * 4008 rather than buffered without end; it reconnects with `since` and misses nothing. The
 * check runs right after each round of publishing and on every heartbeat. As a last resort for
 * a burst that overshoots before the check runs, uWebSockets.js itself cuts a connection whose
 * backlog reaches twice the bound (without a close frame: the client sees 1006).
 */
export interface StreamOptions {
  maxBackpressureBytes: number;
  /** How often each connection gets `{"type":"heartbeat"}`. */
  heartbeatMs: number;
  /** Seconds without traffic before uWebSockets.js closes a connection; it pings before that. */
  idleTimeoutS: number;
}

export const STREAM_DEFAULTS: StreamOptions = { maxBackpressureBytes: 1024 * 1024, heartbeatMs: 30_000, idleTimeoutS: 120 };

const HEARTBEAT_CHANNEL = 'heartbeat';

export class StreamHub {
  readonly publisher: Publisher;
  private readonly sockets = new Set<WebSocket<StreamSocketData>>();
  private readonly heartbeat: NodeJS.Timeout;
  private sweepScheduled = false;

  constructor(
    app: TemplatedApp,
    private readonly events: EventLog,
    private readonly options: StreamOptions,
    private readonly metrics: Metrics,
  ) {
    this.publisher = new Publisher(events, app, () => this.scheduleSweep(), () => this.sockets.size > 0);
    events.onCommitted(() => this.publisher.pump());
    this.heartbeat = setInterval(() => {
      // Events written by other processes (the CLI) are published at the latest with the heartbeat.
      this.publisher.pump();
      app.publish(HEARTBEAT_CHANNEL, heartbeatMessage());
      this.sweep();
    }, options.heartbeatMs);
    this.heartbeat.unref();
  }

  /** The uWebSockets.js behaviour; `upgrade` runs the request pipeline and upgrades on a 101. */
  behavior(upgrade: (res: HttpResponse, req: HttpRequest, context: us_socket_context_t) => void): WebSocketBehavior<StreamSocketData> {
    const bound = this.options.maxBackpressureBytes;
    return {
      maxPayloadLength: 16 * 1024,
      idleTimeout: this.options.idleTimeoutS,
      sendPingsAutomatically: true,
      maxBackpressure: 2 * bound,
      closeOnBackpressureLimit: 1,
      upgrade,
      open: (ws) => {
        const data = ws.getUserData();
        data.session = new Session(ws, data.principal, { events: this.events, publisher: this.publisher, highWaterBytes: Math.floor(bound / 4) });
        this.sockets.add(ws);
        if (this.sockets.size === 1) this.events.follow(true);
        this.metrics.streamConnections.inc();
        ws.subscribe(HEARTBEAT_CHANNEL);
      },
      message: (ws, message, isBinary) => ws.getUserData().session?.receive(message, isBinary),
      drain: (ws) => ws.getUserData().session?.drained(),
      close: (ws) => {
        if (this.sockets.delete(ws) && this.sockets.size === 0) this.events.follow(false);
        this.metrics.streamConnections.dec();
        ws.getUserData().session?.closedByPeer();
      },
    };
  }

  /** What an upgraded connection starts with. */
  userData(principal: Principal): StreamSocketData {
    return { principal, session: null };
  }

  /** Closes every connection with 1001 (going away); clients resume elsewhere with `since`. */
  close(): void {
    clearInterval(this.heartbeat);
    for (const ws of [...this.sockets]) ws.end(CLOSE.goingAway, 'server shutting down');
  }

  private scheduleSweep(): void {
    if (this.sweepScheduled) return;
    this.sweepScheduled = true;
    setImmediate(() => {
      this.sweepScheduled = false;
      this.sweep();
    });
  }

  /** Closes the connections that fell further behind than the bound. */
  private sweep(): void {
    const bound = this.options.maxBackpressureBytes;
    for (const ws of [...this.sockets]) {
      if (ws.getBufferedAmount() > bound) {
        this.metrics.streamSlowConsumers.inc();
        ws.end(CLOSE.slowConsumer, `slow consumer: more than ${bound} bytes unsent; reconnect with since`);
      }
    }
  }
}
