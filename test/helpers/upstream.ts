import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { PolicyEngine } from '../../policies/engine/index.ts';
import type { RunningServer } from '../../proxy/server.ts';
import { BUNDLED_POLICIES } from './policies.ts';

/**
 * Proxy-mode test scaffolding: real upstream servers on 127.0.0.1 ephemeral ports that record
 * what reached them, and the bundled policies with extra route data.
 */
interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface Upstream {
  url: string;
  port: number;
  received: Received[];
  server: Server;
}

/**
 * An upstream answering with `handler`, or by default 200 and a JSON echo of the request line.
 * Requests are recorded once their body has arrived (the default handler reads it).
 */
export async function startUpstream(t: Teardown, handler?: (req: IncomingMessage, res: ServerResponse, received: Received[]) => void): Promise<Upstream> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    if (handler) return handler(req, res, received);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': 'yes' });
      res.end(JSON.stringify({ method: req.method, url: req.url }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}`, port, received, server };
}

/**
 * Makes `upstream` accept WebSocket upgrades and answer every message `m` with `echo:m`. Returns
 * the headers of each upgrade request it received, as they arrive; `connections` gets the
 * upstream's side of each connection.
 */
export function echoWebSockets(t: Teardown, upstream: Upstream, connections: WebSocket[] = []): IncomingHttpHeaders[] {
  const wss = new WebSocketServer({ noServer: true });
  const upgrades: IncomingHttpHeaders[] = [];
  upstream.server.on('upgrade', (req, socket, head) => {
    upgrades.push(req.headers);
    wss.handleUpgrade(req, socket, head, (ws) => {
      connections.push(ws);
      ws.on('message', (data) => ws.send(`echo:${data}`));
    });
  });
  t.teardown(() => wss.close());
  return upgrades;
}

/** The gateway's audit entries, once at least `count` are committed (they are appended after the reply). */
export async function proxyEntries(server: RunningServer, count: number) {
  for (let i = 0; i < 100; i++) {
    const entries = [...server.services.audit.all()].filter((e) => e.route.startsWith('proxy:'));
    if (entries.length >= count) return entries;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`fewer than ${count} proxy audit entries`);
}

/** A port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * The bundled policies with `extra` merged into `data.route_access` (lists appended) and extra
 * policy `files`, compiled once per test process (the bundled data gates only requests that
 * must also be signed).
 */
export function routePolicies(t: Teardown, extra: { gated?: unknown[] }, files: Record<string, string> = {}): Promise<PolicyEngine> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-route-policies-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const source = join(dir, 'rego');
  cpSync(BUNDLED_POLICIES, source, { recursive: true });
  const data = JSON.parse(readFileSync(join(source, 'data.json'), 'utf8'));
  data.route_access.gated.push(...(extra.gated ?? []));
  writeFileSync(join(source, 'data.json'), JSON.stringify(data));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(source, name), text);
  return PolicyEngine.open({ sourceDir: source, buildDir: join(dir, 'build') });
}

/** Writes a routes file and returns its path. */
export function routesFile(dir: string, routes: unknown[], name = 'routes.json'): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify({ routes }));
  return file;
}

export interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  json: any;
}

/**
 * One request with node:http, which (unlike fetch) sends any header as given: hop-by-hop ones
 * included. Gives up after `timeoutMs`.
 */
export function send(
  base: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string | Buffer; timeoutMs?: number } = {},
): Promise<RawAnswer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    // The path goes out as given, never normalised: `/api/../admin` must reach the gateway so.
    const req = request({ hostname, port, path, method, headers: options.headers ?? {}, agent: false, signal: AbortSignal.timeout(options.timeoutMs ?? 10_000) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        let json: unknown;
        try {
          json = JSON.parse(body.toString('utf8'));
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode!, headers: res.headers, body, json });
      });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A held request's result, read until it is neither held nor being sent (a bounded wait). */
export async function settled<T extends { json?: { state?: unknown } }>(read: () => Promise<T>): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const answer = await read();
    if (answer.json?.state !== 'pending' && answer.json?.state !== 'held') return answer;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('the held request never settled');
}

/** A route policy that forwards every request at once: for tests about transport, not access. */
export const OPEN_ACCESS = { 'open-access-v1.rego': 'package gatehouse.open_access.v1\n\nallow := true\n\ngate := "auto"\n' };
