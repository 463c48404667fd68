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
  const socket = await new Promise<uWS.us_listen_socket>((resolve, reject) =>
    app.listen('127.0.0.1', 0, (s) => (s ? resolve(s) : reject(new Error('raw uWS: listen failed')))),
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
