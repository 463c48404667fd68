/**
 * Proxy mode under load: GET /api/items through the Gatehouse gateway (API-key authentication,
 * rate limit, the bundled route-access-v1 policy, http-proxy forwarding over keep-alive, and an
 * audit entry per request) against the same upstream called directly, through http-proxy alone
 * (the gateway's forwarding engine with the gateway's agent settings and nothing else: what
 * http-proxy and node:http cost by themselves) and through nginx `proxy_pass` with upstream
 * keep-alive. The upstream is a node:http server answering a small JSON in a child process of
 * its own, so no proxy measured shares its event loop with it (nginx never did); every target is
 * measured at maximum throughput and open loop at each fixed rate.
 *
 * The latency the sidecar adds is Gatehouse's percentile minus the direct call's at the same
 * rate. nginx runs with one worker process, as Gatehouse runs on one thread; when nginx is not
 * installed it is installed with apt-get (as root only), and its column is skipped with a note
 * when that is not possible.
 *
 * Server CPU per request (`cpuUsPerRequest.<target>`) is this process's CPU time (every thread)
 * over a closed-loop run of the in-process targets, divided by the requests it served: the load
 * generator and the upstream are other processes, so it is the proxy's own cost, and it varies
 * less with a shared machine's speed than throughput does.
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { Agent, createServer as createHttpServer } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import httpProxy from 'http-proxy';
import { addedLatency, findSeries, throughputRatio } from '../lib/added-latency.ts';
import { startNodeHttp, type BaselineServer } from '../lib/baseline-servers.ts';
import { freePort } from '../lib/free-port.ts';
import { runLoad } from '../lib/load.ts';
import { measureTarget, type LoadTarget } from '../lib/load-target.ts';
import { startScenarioGatehouse } from '../lib/scenario-gatehouse.ts';
import type { Scenario, ScenarioOptions, ScenarioResult, Series } from '../scenario.ts';

const UPSTREAM_BODY = JSON.stringify({ items: [{ id: 1, name: 'widget' }, { id: 2, name: 'gadget' }] });
const PATH = '/api/items';
const SELF = fileURLToPath(import.meta.url);

/** The upstream in a child process (this file, run directly): it reports its origin once listening. */
async function startUpstream(): Promise<BaselineServer> {
  const child = fork(SELF, ['upstream'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const origin = await new Promise<string>((resolve, reject) => {
    child.once('message', (message: { origin: string }) => resolve(message.origin));
    child.once('exit', (code) => reject(new Error(`the upstream exited ${code} before listening`)));
  });
  return {
    origin,
    close: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill();
      }),
  };
}

/** http-proxy alone, configured as the gateway's forwarding (proxy/gateway/upstreams.ts) and doing nothing else. */
async function startHttpProxyAlone(upstream: string): Promise<LoadTarget> {
  // Imported on demand, as Gatehouse is: the upstream's child process loads this file too.
  const { maxSocketsPerUpstream } = (await import('../../proxy/gateway/gateway.ts')).GATEWAY_DEFAULTS;
  const agent = new Agent({ keepAlive: true, maxSockets: maxSocketsPerUpstream, maxFreeSockets: maxSocketsPerUpstream, scheduling: 'lifo' });
  const proxy = httpProxy.createProxyServer({ changeOrigin: true, xfwd: false });
  const server = createHttpServer({ keepAliveTimeout: 65_000 }, (req, res) => proxy.web(req, res, { target: upstream, agent }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    name: 'http-proxy',
    baseline: true,
    url: `http://127.0.0.1:${port}${PATH}`,
    headers: {},
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
        agent.destroy();
      }),
  };
}

/**
 * This process's CPU time per request over a closed-loop run against `target` (after a warm-up
 * run), in µs: with the generator and the upstream in other processes, the in-process proxy's.
 */
async function cpuPerRequest(target: LoadTarget, options: ScenarioOptions): Promise<number> {
  const load = { url: target.url, headers: target.headers, method: 'GET', rate: 0, warmupS: 0, connections: options.connections };
  await runLoad({ ...load, durationS: Math.max(options.warmupS, 0.5) });
  const before = process.cpuUsage();
  const run = await runLoad({ ...load, durationS: options.durationS });
  const used = process.cpuUsage(before);
  return Math.round(((used.user + used.system) / Math.max(run.requests, 1)) * 10) / 10;
}

/** Gatehouse with its gateway routing /api to `upstream`, a viewer key, and rate limits lifted. */
async function startGatehouse(workDir: string, upstream: string): Promise<LoadTarget> {
  const routesFile = path.join(workDir, 'routes.json');
  writeFileSync(routesFile, JSON.stringify({ routes: [{ name: 'bench', match: { pathPrefix: '/api' }, upstream, policy: 'route-access-v1', auth: 'api-key' }] }));
  const gatehouse = await startScenarioGatehouse(workDir, { scopes: ['decisions:read'], roles: ['viewer'] }, { proxy: { routesFile, port: 0 } });
  const headers = gatehouse.auth;
  const url = `${gatehouse.server.gateway!.url}${PATH}`;
  const sample = await fetch(url, { headers }).then((r) => r.text());
  if (sample !== UPSTREAM_BODY) throw new Error(`the gateway did not forward: ${sample}`);
  return { name: 'gatehouse', baseline: false, url, headers, stop: gatehouse.stop };
}

/** The nginx binary, installing it when missing and allowed to; otherwise why not. */
function findNginx(progress: (message: string) => void): { binary: string } | { skipped: string } {
  const found = () => spawnSync('sh', ['-c', 'command -v nginx || ls /usr/sbin/nginx 2>/dev/null'], { encoding: 'utf8' }).stdout.trim().split('\n')[0];
  let binary = found();
  if (binary) return { binary };
  if (process.getuid?.() !== 0) return { skipped: 'nginx is not installed and this run is not root, so it cannot apt-get install it' };
  progress('installing nginx with apt-get');
  const install = spawnSync('sh', ['-c', 'apt-get install -y nginx || (apt-get update && apt-get install -y nginx)'], {
    encoding: 'utf8',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    timeout: 600_000,
  });
  binary = found();
  if (binary) return { binary };
  return { skipped: `nginx could not be installed with apt-get (exit ${install.status}): ${(install.stderr || install.stdout).trim().split('\n').slice(-2).join(' ')}` };
}

/** nginx as a child process on an ephemeral port, `proxy_pass` to `upstream` with keep-alive. */
async function startNginx(binary: string, workDir: string, upstream: string): Promise<LoadTarget> {
  const dir = mkdtempSync(path.join(workDir, 'nginx-'));
  for (const sub of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(path.join(dir, sub));
  const port = await freePort();
  const upstreamHost = new URL(upstream).host;
  const conf = path.join(dir, 'nginx.conf');
  writeFileSync(
    conf,
    `daemon off;
worker_processes 1;
${process.getuid?.() === 0 ? 'user root;' : ''}
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  keepalive_requests 1000000;
  upstream bench_upstream { server ${upstreamHost}; keepalive 256; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://bench_upstream;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`,
  );
  const child: ChildProcess = spawn(binary, ['-p', dir, '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const url = `http://127.0.0.1:${port}${PATH}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`nginx exited ${child.exitCode}: ${stderr}`);
    const ok = await fetch(url).then((r) => r.ok, () => false);
    if (ok) break;
    if (i === 100) {
      child.kill('SIGKILL');
      throw new Error(`nginx did not start: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    name: 'nginx',
    baseline: true,
    url,
    headers: {},
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGQUIT');
      }),
  };
}

async function run(options: ScenarioOptions): Promise<ScenarioResult> {
  const series: Series[] = [];
  const profiles: Record<string, string> = {};
  const notes: string[] = [
    `Request: GET ${PATH} with a sandbox viewer key; the gateway authenticates it, evaluates route-access-v1, forwards it over a keep-alive agent and appends an audit entry after the response (not awaited by the client).`,
    'Added latency = gatehouse minus direct at the same fixed rate (open loop, latency counted from when each request was due).',
  ];
  const cpu: Record<string, number> = {};
  const measure = (target: LoadTarget) => measureTarget(target, { method: 'GET' }, options, { series, profiles }, 'proxy');
  /** Targets served by this process: their CPU per request first, then the load runs. */
  const measureInProcess = async (target: LoadTarget) => {
    try {
      cpu[target.name] = await cpuPerRequest(target, options);
      options.progress(`${target.name}: ${cpu[target.name]} µs of server CPU per request`);
    } catch (error) {
      await target.stop();
      throw error;
    }
    await measure(target);
  };

  const upstream = await startUpstream();
  try {
    await measure({ name: 'direct-upstream', baseline: true, url: `${upstream.origin}${PATH}`, headers: {}, stop: async () => {} });
    await measureInProcess(await startHttpProxyAlone(upstream.origin));
    options.progress('starting gatehouse (compiling the bundled policies)');
    await measureInProcess(await startGatehouse(options.workDir, upstream.origin));
    const nginx = findNginx(options.progress);
    if ('binary' in nginx) await measure(await startNginx(nginx.binary, options.workDir, upstream.origin));
    else notes.push(`nginx column skipped: ${nginx.skipped}`);
  } finally {
    await upstream.close();
  }

  const added = addedLatency(series, 'gatehouse', 'direct-upstream', options.rates);
  if (added.note) notes.push(added.note);
  const metrics: Record<string, number> = added.metrics;
  const ghMax = findSeries(series, 'gatehouse', null)!.throughput;
  metrics.throughputRatioDirect = throughputRatio(ghMax, findSeries(series, 'direct-upstream', null)!.throughput);
  const httpProxyMax = findSeries(series, 'http-proxy', null)!.throughput;
  metrics.throughputRatioHttpProxy = throughputRatio(ghMax, httpProxyMax);
  const nginxMax = findSeries(series, 'nginx', null);
  if (nginxMax) {
    metrics.throughputRatioNginx = throughputRatio(ghMax, nginxMax.throughput);
    metrics.httpProxyThroughputRatioNginx = throughputRatio(httpProxyMax, nginxMax.throughput);
  }
  for (const [name, us] of Object.entries(cpu)) metrics[`cpuUsPerRequest.${name}`] = us;
  if (cpu['gatehouse'] && cpu['http-proxy']) metrics.cpuPerRequestRatioHttpProxy = Math.round((cpu['gatehouse'] / cpu['http-proxy']) * 100) / 100;
  notes.push(
    'http-proxy: the same node:http listener and keep-alive agent with http-proxy forwarding and nothing else, what the gateway could reach if its own work cost nothing.',
    `cpuUsPerRequest.<target>: the harness process's CPU time over a ${options.durationS} s closed-loop run divided by the requests served; the generator and the upstream run in other processes.`,
    'cpuPerRequestRatioHttpProxy: cpuUsPerRequest.gatehouse ÷ cpuUsPerRequest.http-proxy, what the gateway costs its host against forwarding alone.',
  );
  return { scenario: 'proxy', description: scenario.description, series, metrics, notes, profiles };
}

export const scenario: Scenario = {
  name: 'proxy',
  description:
    'Proxy mode: GET through the Gatehouse gateway (auth, route policy, http-proxy, audit) vs the upstream called directly, http-proxy alone and nginx proxy_pass with keep-alive: added latency at fixed rates, maximum throughput and server CPU per request.',
  run,
};

if (process.argv[1] === SELF && process.argv[2] === 'upstream' && process.send) {
  const upstream = await startNodeHttp(UPSTREAM_BODY);
  process.send({ origin: upstream.origin });
  process.on('disconnect', () => process.exit(0));
}
