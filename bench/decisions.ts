/**
 * Governed decision creation under load: POST /v1/decisions through the whole pipeline (bearer
 * auth, rate limit, schema validation, policy evaluation with the bundled decision-gate-v1, and
 * a durable LMDB commit of the decision with its audit entry) against two baselines serving the
 * same JSON with no work at all: a raw uWebSockets.js handler (the ceiling) and a node:http one.
 *
 * The server under test runs in this process; the load generator (bench/lib/load.ts) runs in a
 * child process. Each target is measured at maximum throughput and open loop at fixed rates.
 *
 *   node --import tsx bench/decisions.ts [--duration 10] [--rates 1000,2500,5000] [--connections 64]
 *
 * Results go to bench/results/decisions.json and a table on stdout.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { runLoad, type LoadResult } from './lib/load.ts';

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  body: string;
  stop(): Promise<void>;
}

const DECISION_BODY = JSON.stringify({
  title: 'Deploy web to canary',
  policy: 'decision-gate-v1',
  context: [
    { source: 'risk:score', value: 12 },
    { source: 'deploy:replicas', value: 3 },
  ],
  inputs: ['repo:web', 'ticket:OPS-1234'],
});

async function gatehouseTarget(): Promise<{ target: Target; sample: string }> {
  const { PolicyEngine } = await import('../policies/engine/index.ts');
  const { startServer } = await import('../proxy/server.ts');
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-'));
  const engine = await PolicyEngine.open({ sourceDir: fileURLToPath(new URL('../policies/rego', import.meta.url)), buildDir: join(dir, 'policies') });
  // Rate limits are not what is measured here: lift them.
  const unlimited = { ratePerSecond: 1e9, burst: 1e9 };
  const server = await startServer({ dataDir: dir, policies: engine, port: 0, rateLimits: { sandbox: unlimited, production: unlimited } });
  const admin = server.adminKey.generated!;
  const issued = await fetch(`${server.url}/v1/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    body: JSON.stringify({ env: 'sandbox', scopes: ['decisions:write'] }),
  }).then((r) => r.json() as Promise<{ key: string }>);
  const headers = { authorization: `Bearer ${issued.key}`, 'content-type': 'application/json' };
  const sample = await fetch(`${server.url}/v1/decisions`, { method: 'POST', headers, body: DECISION_BODY }).then((r) => r.text());
  if (!sample.includes('"status":"created"')) throw new Error(`gatehouse did not create a decision: ${sample}`);
  return {
    sample,
    target: {
      name: 'gatehouse (auth + policy + durable audit)',
      url: `${server.url}/v1/decisions`,
      headers,
      body: DECISION_BODY,
      stop: async () => {
        await server.close();
        await engine.close();
        rmSync(dir, { recursive: true, force: true });
      },
    },
  };
}

async function rawUwsTarget(sample: string): Promise<Target> {
  const { default: uWS } = await import('uWebSockets.js');
  const app = uWS.App();
  app.post('/v1/decisions', (res) => {
    res.onAborted(() => {});
    res.onData((_chunk, isLast) => {
      if (isLast) res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(sample));
    });
  });
  const socket = await new Promise<NonNullable<Parameters<Parameters<typeof app.listen>[2]>[0]>>((resolve, reject) =>
    app.listen('127.0.0.1', 0, (s) => (s ? resolve(s) : reject(new Error('listen failed')))),
  );
  const port = uWS.us_socket_local_port(socket as unknown as import('uWebSockets.js').us_socket);
  return {
    name: 'raw uWebSockets.js (same JSON, no work)',
    url: `http://127.0.0.1:${port}/v1/decisions`,
    headers: { 'content-type': 'application/json' },
    body: DECISION_BODY,
    stop: async () => {
      uWS.us_listen_socket_close(socket);
      (app as unknown as { close(): void }).close();
    },
  };
}

async function nodeHttpTarget(sample: string): Promise<Target> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(sample);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    name: 'node:http (same JSON, no work)',
    url: `http://127.0.0.1:${port}/v1/decisions`,
    headers: { 'content-type': 'application/json' },
    body: DECISION_BODY,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '3' },
      rates: { type: 'string', default: '1000,2500,5000' },
      connections: { type: 'string', default: '64' },
      out: { type: 'string', default: fileURLToPath(new URL('./results/decisions.json', import.meta.url)) },
    },
  });
  const durationS = Number(values.duration);
  const warmupS = Number(values.warmup);
  const connections = Number(values.connections);
  const rates = values.rates.split(',').map(Number).filter((r) => r > 0);

  const runs: Array<{ target: string; mode: string; rate: number | null } & LoadResult> = [];
  const measure = async (target: Target) => {
    for (const rate of [0, ...rates]) {
      const mode = rate === 0 ? 'max' : `${rate}/s`;
      process.stderr.write(`${target.name}: ${mode} …\n`);
      const result = await runLoad({ url: target.url, headers: target.headers, body: target.body, rate, durationS, warmupS, connections });
      runs.push({ target: target.name, mode, rate: rate || null, ...result });
    }
    await target.stop();
  };

  const { target: gatehouse, sample } = await gatehouseTarget();
  await measure(gatehouse);
  await measure(await rawUwsTarget(sample));
  await measure(await nodeHttpTarget(sample));

  const max = (name: string) => runs.find((r) => r.target.startsWith(name) && r.mode === 'max')!.throughput;
  const at5000 = runs.find((r) => r.target.startsWith('gatehouse') && r.rate === 5000);
  const summary = {
    gatehouseMaxThroughput: max('gatehouse'),
    rawUwsMaxThroughput: max('raw uWebSockets.js'),
    nodeHttpMaxThroughput: max('node:http'),
    gatehouseShareOfRawUws: Math.round((max('gatehouse') / max('raw uWebSockets.js')) * 1000) / 1000,
    targets: {
      'p99 <= 2 ms at 5,000 req/s': at5000 ? at5000.latencyMs.p99 <= 2 && at5000.errors === 0 : null,
      'max throughput >= 40% of raw uWS': max('gatehouse') / max('raw uWebSockets.js') >= 0.4,
    },
  };
  const report = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model ?? 'unknown', node: process.version },
    config: { durationS, warmupS, connections, rates, request: 'POST /v1/decisions, decision-gate-v1, auto gate' },
    summary,
    runs,
  };
  writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(['target'.padEnd(44), 'mode'.padEnd(8), 'req/s'.padStart(8), 'p50 ms'.padStart(9), 'p99 ms'.padStart(9), 'p99.9 ms'.padStart(9), 'errors'.padStart(7)].join(' '));
  for (const r of runs) {
    console.log([
      r.target.padEnd(44),
      r.mode.padEnd(8),
      String(r.throughput).padStart(8),
      r.latencyMs.p50.toFixed(3).padStart(9),
      r.latencyMs.p99.toFixed(3).padStart(9),
      r.latencyMs.p999.toFixed(3).padStart(9),
      String(r.errors).padStart(7),
    ].join(' '));
  }
  console.log(JSON.stringify(summary, null, 2));
  console.log(`written to ${values.out}`);
}

await main();
