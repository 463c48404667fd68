/**
 * Servers that do no work at all, measured beside Gatehouse as its ceiling and peer: whatever they
 * reach is what the machine, the HTTP stack and the load generator allow.
 */
import { createServer } from 'node:http';
import uWS from 'uWebSockets.js';

export interface BaselineServer {
  /** Origin, e.g. `http://127.0.0.1:40123`; every method and path is answered the same. */
  origin: string;
  close(): Promise<void>;
}

/** A raw uWebSockets.js handler: reads the body, answers 200 with `body`. The ceiling. */
export async function startRawUws(body: string, contentType = 'application/json'): Promise<BaselineServer> {
  const app = uWS.App();
  app.any('/*', (res) => {
    res.onAborted(() => {});
    res.onData((_chunk, isLast) => {
      if (isLast) res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', contentType).end(body));
    });
  });
  return listenUws(app, 'raw uWS');
}

/** Listens on an ephemeral port of 127.0.0.1; closing also ends the connections still open. */
export async function listenUws(app: uWS.TemplatedApp, name: string): Promise<BaselineServer> {
  const socket = await new Promise<uWS.us_listen_socket>((resolve, reject) =>
    app.listen('127.0.0.1', 0, (s) => (s ? resolve(s) : reject(new Error(`${name}: listen failed`)))),
  );
  const port = uWS.us_socket_local_port(socket as unknown as uWS.us_socket);
  return {
    origin: `http://127.0.0.1:${port}`,
    close: async () => {
      uWS.us_listen_socket_close(socket);
      // Closes the connections still open; the typings omit it.
      (app as uWS.TemplatedApp & { close(): void }).close();
    },
  };
}

/** A node:http handler doing the same: the peer most Node services are built on. */
export async function startNodeHttp(body: string, contentType = 'application/json'): Promise<BaselineServer> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': contentType });
      res.end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The stream's floor: uWebSockets.js pub/sub with no Gatehouse in it. `WS /v1/streaming` answers
 * any message with `subscribed` and joins the socket to one topic; `POST /v1/decisions` publishes
 * an event carrying the posted title at once and answers 200. The event is shaped and sized like
 * Gatehouse's `decision.created` (a decision view in `data`), so the subscribers do the same
 * work per receipt and only what Gatehouse does in between is missing.
 */
export async function startRawUwsPublisher(): Promise<BaselineServer> {
  const app = uWS.App();
  let cursor = 0;
  app.ws('/v1/streaming', {
    message: (ws) => {
      ws.subscribe('decisions');
      ws.send(JSON.stringify({ type: 'subscribed', topics: ['decisions'], cursor }));
    },
  });
  app.post('/v1/decisions', (res) => {
    res.onAborted(() => {});
    const chunks: Buffer[] = [];
    res.onData((chunk, isLast) => {
      chunks.push(Buffer.from(chunk.slice(0)));
      if (!isLast) return;
      const { title, policy, context } = JSON.parse(Buffer.concat(chunks).toString()) as { title: string; policy: string; context: unknown };
      cursor++;
      const id = `dec_${String(cursor).padStart(22, '0')}`;
      const time = new Date().toISOString();
      const data = {
        id, title, policy, moduleHash: `sha256:${'0'.repeat(64)}`, context, inputs: [], objectives: [], status: 'created', gate: 'auto', nextAction: 'execute',
        reasons: ['low risk: auto-approved'], requiredApprovals: { roles: [], count: 0 }, approvals: [],
        history: [{ action: 'create', keyId: 'key_baseline', at: time, status: 'created', comment: null }],
        createdBy: 'key_baseline', createdAt: time, updatedAt: time, auditTrail: `trace_${id.slice(4)}`, subject: null,
      };
      app.publish('decisions', JSON.stringify({ type: 'event', cursor, id: `evt_${id.slice(4)}`, kind: 'decision.created', topic: `decisions/${id}`, time, data }));
      res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(JSON.stringify(data)));
    });
  });
  return listenUws(app, 'raw uWS publisher');
}
