/**
 * Gatehouse as an operator runs it, `gatehouse serve` in a child process of its own, for scenarios
 * that measure several instances (the `cluster` scenario): each instance's CPU time is then its
 * own process's in `/proc/<pid>/stat`, and each can be pinned to a core with `taskset`. Rate
 * limits are lifted and signatures off (what is measured is the governed write, not key
 * management); the bootstrap admin key is the one given, so every instance of a cluster shares it.
 * The process writes its output to `serve.log` beside its data directory.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DECISION_BODY } from './decision-body.ts';

const BIN = fileURLToPath(new URL('../../bin/gatehouse.js', import.meta.url));
const UNLIMITED = '1000000000/1000000000';
/** The first start compiles the bundled policies (about 10 s on the 2-core VM, longer when it is busy). */
const START_TIMEOUT_MS = 180_000;
const STOP_TIMEOUT_MS = 10_000;
const POLL_MS = 100;

export interface GatehouseProcessOptions {
  /** Where the instance keeps its data directory (`<dir>/data`) and its output (`<dir>/serve.log`). */
  dir: string;
  /** GATEHOUSE_ADMIN_KEY: the bootstrap admin key's secret. */
  adminKey: string;
  /** The core the process is pinned to with `taskset -c`; null leaves it to the scheduler. */
  core: number | null;
  /** Cluster mode: `--nats`, `--nats-namespace` and GATEHOUSE_NODE_ID. Single node without it. */
  cluster?: { urls: string[]; namespace: string; nodeId: string };
  /** `--threads` (1 unless given). */
  threads?: number;
}

export interface GatehouseProcess {
  /** The /v1 API's origin. */
  url: string;
  /** The Node process serving it (taskset execs it, so this is Node's own pid): where its CPU is read. */
  pid: number;
  core: number | null;
  /** SIGTERM (drains, closes the store), SIGKILL if it has not exited within 10 s. */
  stop(): Promise<void>;
}

/** Whether `taskset` can pin processes here (util-linux, Linux only). */
export function canPin(): boolean {
  return spawnSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' }).status === 0;
}

/** Starts `gatehouse serve` on 127.0.0.1, an ephemeral port, and resolves once it listens. */
export async function startGatehouseProcess(options: GatehouseProcessOptions): Promise<GatehouseProcess> {
  mkdirSync(options.dir, { recursive: true });
  const serve = [process.execPath, BIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', path.join(options.dir, 'data')];
  serve.push('--signatures', 'off', '--rate-sandbox', UNLIMITED, '--rate-production', UNLIMITED);
  if (options.cluster) serve.push('--nats', options.cluster.urls.join(','), '--nats-namespace', options.cluster.namespace);
  if (options.threads) serve.push('--threads', String(options.threads));
  const env = { GATEHOUSE_ADMIN_KEY: options.adminKey, ...(options.cluster ? { GATEHOUSE_NODE_ID: options.cluster.nodeId } : {}) };
  const started = await startListeningProcess('gatehouse serve', serve, env, path.join(options.dir, 'serve.log'), options.core);
  return { url: started.url, pid: started.pid, core: options.core, stop: started.stop };
}

/** Bound on a key issued on one instance reaching the others (replication is milliseconds). */
const KEY_REPLICATION_TIMEOUT_MS = 10_000;

/** Issues a sandbox key on the first instance and checks every instance creates a decision with it; resolves to the load's headers. */
export async function issueLoadKey(instances: Pick<GatehouseProcess, 'url'>[], adminKey: string): Promise<Record<string, string>> {
  const issued = await fetch(`${instances[0]!.url}/v1/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ env: 'sandbox', scopes: ['decisions:write'], name: 'bench-load' }),
  });
  const answer = await issued.text();
  if (issued.status !== 201) throw new Error(`issuing the load's key failed: ${issued.status} ${answer}`);
  const headers = { authorization: `Bearer ${(JSON.parse(answer) as { key: string }).key}`, 'content-type': 'application/json' };
  for (const instance of instances) {
    // Another instance knows the key once the commit that issued it has reached its copy.
    for (const deadline = Date.now() + KEY_REPLICATION_TIMEOUT_MS; ; ) {
      const created = await fetch(`${instance.url}/v1/decisions`, { method: 'POST', headers, body: DECISION_BODY });
      const text = await created.text();
      if (text.includes('"status":"created"')) break;
      if (created.status !== 401 || Date.now() > deadline) throw new Error(`${instance.url} did not create a decision: ${created.status} ${text}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return headers;
}

/** A server in a child process of its own, once it has printed `listening on <url>`: what it printed, and how to stop it. */
export interface ListeningProcess {
  url: string;
  pid: number;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts `argv` (pinned to `core` with taskset, unless null) with its output in `logFile`, and
 * resolves once it prints `listening on <url>`; it is killed if this process exits first.
 */
export async function startListeningProcess(name: string, argv: string[], env: Record<string, string>, logFile: string, core: number | null): Promise<ListeningProcess> {
  const [command, ...args] = core === null ? argv : ['taskset', '-c', String(core), ...argv];
  const log = openSync(logFile, 'a');
  const child = spawn(command!, args, { env: { ...process.env, ...env }, stdio: ['ignore', log, log] });
  closeSync(log);
  let spawnError: Error | null = null;
  child.once('error', (error) => (spawnError = error));
  // A harness that ends without stopping it (a throw, an exit) must not leave it serving.
  const killOnExit = () => child.kill('SIGKILL');
  process.on('exit', killOnExit);
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      process.off('exit', killOnExit);
      resolve();
    }),
  );
  const running = () => child.exitCode === null && child.signalCode === null;
  const stop = async () => {
    if (!running()) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };
  const output = () => readFileSync(logFile, 'utf8');
  for (const deadline = Date.now() + START_TIMEOUT_MS; ; ) {
    if (spawnError) throw new Error(`${name} did not start: ${(spawnError as Error).message}`);
    if (!running()) throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}) before listening:\n${output().slice(-2000)}`);
    const url = /listening on (http:\/\/\S+)/.exec(output())?.[1];
    if (url) return { url, pid: child.pid!, output, stop };
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${name} did not listen within ${START_TIMEOUT_MS / 1000} s:\n${output().slice(-2000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** Decisions `instance` has answered 200 to so far, from its Prometheus counter of requests. */
export async function decisionsAnswered(instance: Pick<GatehouseProcess, 'url'>): Promise<number> {
  const text = await fetch(`${instance.url}/metrics`).then((r) => r.text());
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('gatehouse_http_requests_total{')) continue;
    const labels = line.slice(line.indexOf('{'), line.lastIndexOf('}') + 1);
    if (labels.includes('method="POST"') && labels.includes('route="/v1/decisions"') && labels.includes('status="200"')) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}
