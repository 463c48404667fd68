// Live updates from WS /v1/streaming. A browser cannot set headers on a WebSocket: the upgrade
// carries the session cookie (and the Origin the server checks) instead (docs/streaming.md).
// On a dropped connection it reconnects and resumes after the last event it saw, so nothing is
// missed; a listener is told of every decision event and of the connection's state.

const RETRY_MS = [1000, 2000, 5000, 10000];

export class Live {
  constructor() {
    this.listeners = new Set();
    this.stateListeners = new Set();
    this.state = 'connecting';
    this.cursor = null;
    this.attempt = 0;
    this.closed = false;
    this.connect();
  }

  /** `listener(event)` for every decision event; returns the function that stops it. */
  on(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** `listener(state)` whenever the connection opens (`live`) or drops (`offline`). */
  onState(listener) {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  close() {
    this.closed = true;
    clearTimeout(this.retry);
    this.socket?.close(1000);
  }

  connect() {
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const socket = new WebSocket(`${scheme}//${location.host}/v1/streaming`);
    this.socket = socket;
    socket.addEventListener('open', () => {
      const subscribe = { type: 'subscribe', topics: ['decisions'] };
      if (this.cursor !== null) subscribe.since = this.cursor;
      socket.send(JSON.stringify(subscribe));
    });
    socket.addEventListener('message', (message) => this.receive(JSON.parse(message.data)));
    socket.addEventListener('close', () => {
      if (this.closed) return;
      this.setState('offline');
      const delay = RETRY_MS[Math.min(this.attempt++, RETRY_MS.length - 1)];
      this.retry = setTimeout(() => this.connect(), delay);
    });
  }

  receive(message) {
    if (message.type === 'subscribed') {
      this.attempt = 0;
      this.cursor = message.cursor;
      this.setState('live');
    } else if (message.type === 'error' && message.code === 'cursor_expired') {
      // Too long away: start afresh from now; pages reload what they show when told `live`.
      this.cursor = null;
      this.socket.close();
    } else if (message.type === 'event') {
      this.cursor = message.cursor;
      for (const listener of this.listeners) listener(message);
    }
  }

  setState(state) {
    this.state = state;
    for (const listener of this.stateListeners) listener(state);
  }
}
