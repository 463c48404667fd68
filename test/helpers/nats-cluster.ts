/**
 * Local NATS JetStream clusters of real `nats-server` processes (Debian's 2.9.x) on 127.0.0.1,
 * for the cluster tests and for development (`scripts/nats-cluster.ts`). Each server has its own
 * ephemeral client, route and monitoring ports, its own JetStream store and its own log, all in
 * one directory that `stop()` removes. Processes are followed by PID through /proc (Linux), so a
 * cluster started by one process (the script's `start`) can be inspected and stopped by another
 * (`attachNatsCluster`), and a test can SIGKILL, SIGSTOP, SIGCONT and restart single servers.
 * Every wait is bounded and fails with the tail of the servers' logs.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../bench/lib/free-port.ts';

/** The server binary: Debian installs it outside a normal user's PATH. */
export const NATS_SERVER = process.env.NATS_SERVER_PATH ?? '/usr/sbin/nats-server';

const MANIFEST = 'cluster.json';
const CLUSTER_NAME = 'gatehouse';
const POLL_MS = 50;
/** A SIGSTOPped server accepts monitoring connections and never answers: probes give up. */
const PROBE_TIMEOUT_MS = 1000;
/** Bound on a signal taking effect (and on SIGTERM before SIGKILL). */
const SIGNAL_TIMEOUT_MS = 5000;
const DEFAULT_READY_TIMEOUT_MS = 20_000;
const LOG_TAIL_CHARS = 2000;

/** A server process as /proc shows it: `stopped` after SIGSTOP, `gone` once it has exited. */
export type ProcessState = 'running' | 'stopped' | 'gone';

/** The signals `NatsServer.kill` sends and waits out. */
export type ServerSignal = 'SIGKILL' | 'SIGTERM' | 'SIGINT' | 'SIGSTOP' | 'SIGCONT';

export interface NatsClusterOptions {
  /** 3 (default) for a JetStream cluster with Raft, 1 for a single JetStream server (quick tests). */
  size?: 1 | 3;
  /** Where configs, stores and logs go (created if missing); a new temporary directory by default. */
  dir?: string;
  /** Servers in their own process group, not waited for by this process: they outlive it (the script). */
  detached?: boolean;
  /** Bound on every wait for the cluster to be ready (start, restart); 20 s by default. */
  readyTimeoutMs?: number;
}

export interface NatsServerStatus {
  name: string;
  url: string;
  pid: number;
  process: ProcessState;
  /** `/healthz` answered ok: JetStream is up and in contact with its meta leader. */
  healthy: boolean;
  /** Why it is not healthy (the server's own words, or why it could not be asked); '' when healthy. */
  detail: string;
  /** The JetStream meta leader this server knows of (itself when it runs alone); null if none. */
  metaLeader: string | null;
  /** The Raft groups it is a member of (none when it runs alone). */
  groups: RaftGroupView[];
}

/** A Raft group as one server sees it: only the leader's own view of the peers is up to date. */
export interface RaftGroupView {
  /** `$meta` (JetStream's meta group), a stream's name, or `stream/consumer`. */
  group: string;
  leader: string | null;
  /** The other members, and whether their log is current. */
  peers: { name: string; current: boolean }[];
  /**
   * For a stream, the last sequence this server's replica holds; null for the meta group and
   * consumers (a consumer's follower reports no state of its own).
   */
  lastSeq: number | null;
}

export interface NatsServer {
  readonly name: string;
  /** `nats://127.0.0.1:<port>`; the same after a restart. */
  readonly url: string;
  /** `http://127.0.0.1:<port>`, the monitoring endpoint (`/healthz`, `/jsz`, `/routez`). */
  readonly monitorUrl: string;
  readonly configFile: string;
  readonly storeDir: string;
  /** The server's stdout and stderr (it logs to stderr), appended across restarts. */
  readonly logFile: string;
  /** The PID of the latest process started for this server (it changes on restart). */
  readonly pid: number;
  /** The process's state now, read from /proc. */
  state(): ProcessState;
  /**
   * Sends `signal` and resolves once it has taken effect (bounded): gone for SIGKILL, SIGTERM and
   * SIGINT, stopped for SIGSTOP, running again for SIGCONT. A stopped server does not act on
   * SIGTERM or SIGINT until continued; `stop()` handles that.
   */
  kill(signal: ServerSignal): Promise<void>;
  /** Ends the process if it is still there: SIGTERM (and SIGCONT), SIGKILL after 5 s. */
  stop(): Promise<void>;
  /**
   * Starts the server again with the same config, ports and store after it has gone, and
   * resolves once the cluster is ready again (this server caught up). Throws if it still runs.
   */
  start(): Promise<void>;
}

export interface NatsCluster {
  readonly dir: string;
  /** The servers' client URLs, in server order: what `connect({ servers })` takes. */
  readonly urls: string[];
  readonly servers: NatsServer[];
  /**
   * Resolves once every server that should run (started and not killed; SIGSTOPped ones aside)
   * is healthy and, with 3 servers, every Raft group (the meta group, each stream and consumer)
   * has a leader among them that sees each of them current, and each of them holds every stream
   * up to the last sequence its leader held when the wait began: a restarted server has caught up.
   * Fails at once if such a server has exited, and after `readyTimeoutMs` otherwise.
   */
  ready(): Promise<void>;
  /** Each server's process state and what its monitoring endpoint says. */
  status(): Promise<NatsServerStatus[]>;
  /** Stops every server by PID and removes the directory. */
  stop(): Promise<void>;
}

interface ServerSpec {
  name: string;
  url: string;
  monitorUrl: string;
  configFile: string;
  storeDir: string;
  logFile: string;
  pid: number;
}

interface Manifest {
  size: number;
  servers: ServerSpec[];
}

/** Starts a cluster in a fresh directory and resolves once it is ready; stops it again if it is not. */
export async function startNatsCluster(options: NatsClusterOptions = {}): Promise<NatsCluster> {
  const size = options.size ?? 3;
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'gatehouse-nats-'));
  mkdirSync(dir, { recursive: true });
  const ports = await distinctFreePorts(size * 3);
  const routePorts = ports.slice(size, size * 2);
  const specs = Array.from({ length: size }, (_, i): ServerSpec => {
    const name = `nats-${i + 1}`;
    const spec = {
      name,
      url: `nats://127.0.0.1:${ports[i]}`,
      monitorUrl: `http://127.0.0.1:${ports[size * 2 + i]}`,
      configFile: join(dir, `${name}.conf`),
      storeDir: join(dir, name),
      logFile: join(dir, `${name}.log`),
      pid: 0,
    };
    writeFileSync(spec.configFile, serverConfig(spec, size === 1 ? null : { port: routePorts[i]!, routes: routePorts.filter((_, j) => j !== i) }));
    return spec;
  });
  const { cluster, spawnServer } = clusterOf(dir, specs, options);
  try {
    specs.forEach(spawnServer);
    await cluster.ready();
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return cluster;
}

/**
 * The cluster whose manifest is in `dir`, as another process started it: for inspecting and
 * stopping it, or restarting its servers (then detached, as they belong to no process).
 */
export function attachNatsCluster(dir: string, options: Pick<NatsClusterOptions, 'readyTimeoutMs'> = {}): NatsCluster | null {
  const file = join(dir, MANIFEST);
  if (!existsSync(file)) return null;
  const manifest = JSON.parse(readFileSync(file, 'utf8')) as Manifest;
  return clusterOf(dir, manifest.servers, { ...options, detached: true }).cluster;
}

function clusterOf(dir: string, specs: ServerSpec[], options: NatsClusterOptions): { cluster: NatsCluster; spawnServer: (spec: ServerSpec) => void } {
  const readyTimeoutMs = options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
  const single = specs.length === 1;
  const saveManifest = () => writeFileSync(join(dir, MANIFEST), JSON.stringify({ size: specs.length, servers: specs } satisfies Manifest, null, 2));
  // Which servers should be running: started here (or found running) and not ended since.
  const wanted = new Set(specs.filter((spec) => spec.pid > 0 && processState(spec) !== 'gone'));
  const spawnErrors = new Map<ServerSpec, Error>();
  // A process that ends without stop() (an uncaught error, an await never settled) must not
  // leave its servers behind; detached ones are meant to outlive it.
  const killOnExit = () => specs.filter((spec) => processState(spec) !== 'gone').forEach((spec) => signal(spec, 'SIGKILL'));
  if (!options.detached) process.on('exit', killOnExit);

  const status = (): Promise<NatsServerStatus[]> => Promise.all(specs.map((spec) => probe(spec, single)));

  const ready = async (): Promise<void> => {
    // Fixed at first sight, so that a replica can catch up with a stream that keeps growing.
    const targets = new Map<string, number>();
    /** What the last look found unsettled, for the timeout's message. */
    let waitingOn = '';
    await waitFor(`the NATS cluster in ${dir} to be ready`, readyTimeoutMs, async () => {
      const live = specs.filter((spec) => wanted.has(spec) && processState(spec) !== 'stopped');
      for (const spec of live) {
        const failure = spawnErrors.get(spec);
        if (failure) throw new Error(`${spec.name} did not start: ${failure.message}`);
        if (processState(spec) === 'gone') throw new Error(`${spec.name} exited\n${logTail(spec)}`);
      }
      const reports = await Promise.all(live.map((spec) => probe(spec, single)));
      const unhealthy = reports.filter((report) => !report.healthy).map((report) => report.name);
      waitingOn = unhealthy.length > 0 ? `unhealthy: ${unhealthy.join(', ')}` : single ? '' : (groupsSettled(reports, targets) ?? '');
      return waitingOn === '';
    }, () => `waiting on ${waitingOn}\n${specs.map(logTail).join('\n')}`);
  };

  const spawnServer = (spec: ServerSpec): void => {
    spawnErrors.delete(spec);
    const log = openSync(spec.logFile, 'a');
    const child = spawn(NATS_SERVER, ['-c', spec.configFile], { stdio: ['ignore', log, log], detached: options.detached ?? false });
    closeSync(log);
    child.once('error', (error) => spawnErrors.set(spec, error));
    if (options.detached) child.unref();
    spec.pid = child.pid ?? 0;
    wanted.add(spec);
    saveManifest();
  };

  const servers = specs.map((spec): NatsServer => {
    const waitUntil = (target: (state: ProcessState) => boolean, what: string) =>
      waitFor(`${spec.name} (pid ${spec.pid}) to be ${what}`, SIGNAL_TIMEOUT_MS, () => target(processState(spec)));
    const kill = async (sent: ServerSignal): Promise<void> => {
      if (processState(spec) === 'gone') throw new Error(`${spec.name} is not running`);
      if (sent !== 'SIGSTOP' && sent !== 'SIGCONT') wanted.delete(spec);
      signal(spec, sent);
      if (sent === 'SIGSTOP') return waitUntil((state) => state === 'stopped', 'stopped');
      if (sent === 'SIGCONT') return waitUntil((state) => state !== 'stopped', 'continued');
      return waitUntil((state) => state === 'gone', 'gone');
    };
    return {
      ...spec,
      get pid() {
        return spec.pid;
      },
      state: () => processState(spec),
      kill,
      async stop() {
        wanted.delete(spec);
        if (processState(spec) === 'gone') return;
        signal(spec, 'SIGTERM');
        signal(spec, 'SIGCONT');
        try {
          await waitUntil((state) => state === 'gone', 'gone after SIGTERM');
        } catch {
          signal(spec, 'SIGKILL');
          await waitUntil((state) => state === 'gone', 'gone after SIGKILL');
        }
      },
      async start() {
        if (spec.pid > 0 && processState(spec) !== 'gone') throw new Error(`${spec.name} is still running (pid ${spec.pid})`);
        spawnServer(spec);
        await ready();
      },
    };
  });

  const cluster: NatsCluster = {
    dir,
    urls: specs.map((spec) => spec.url),
    servers,
    ready,
    status,
    async stop() {
      await Promise.all(servers.map((server) => server.stop()));
      process.off('exit', killOnExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return { cluster, spawnServer };
}

function serverConfig(spec: ServerSpec, cluster: { port: number; routes: number[] } | null): string {
  const lines = [
    `server_name: ${spec.name}`,
    `listen: ${new URL(spec.url).host}`,
    `http: ${new URL(spec.monitorUrl).host}`,
    `jetstream { store_dir: ${JSON.stringify(spec.storeDir)} }`,
  ];
  if (cluster) {
    const routes = cluster.routes.map((port) => `nats-route://127.0.0.1:${port}`).join(', ');
    lines.push(`cluster { name: ${CLUSTER_NAME}, listen: 127.0.0.1:${cluster.port}, routes [ ${routes} ] }`);
  }
  return lines.join('\n') + '\n';
}

/** `count` different ports free a moment ago (two probes in a row can be handed the same one). */
async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  for (let attempt = 0; ports.size < count; attempt++) {
    if (attempt === count * 10) throw new Error(`could not find ${count} distinct free ports`);
    ports.add(await freePort());
  }
  return [...ports];
}

/**
 * Whether every Raft group one of `reports` is in has a leader among them whose own view has each
 * other member among them current and, for a stream, holding at least `targets`' sequence (set
 * from the leader's the first time it is seen). Members not reporting (down) are not waited for.
 */
function groupsSettled(reports: NatsServerStatus[], targets: Map<string, number>): string | null {
  const names = new Set(reports.flatMap((report) => report.groups.map((view) => view.group)));
  for (const name of names) {
    const viewOf = (report: NatsServerStatus) => report.groups.find((view) => view.group === name);
    const leader = reports.find((report) => viewOf(report)?.leader === report.name);
    if (!leader) return `${name}: no leader`;
    const leaderView = viewOf(leader)!;
    if (leaderView.lastSeq !== null && !targets.has(name)) targets.set(name, leaderView.lastSeq);
    const target = targets.get(name) ?? null;
    const members = reports.filter((report) => report !== leader && (viewOf(report) || leaderView.peers.some((peer) => peer.name === report.name)));
    for (const member of members) {
      const current = leaderView.peers.some((peer) => peer.name === member.name && peer.current);
      const seq = viewOf(member)?.lastSeq ?? -1;
      if (!current || (target !== null && seq < target)) return `${name}: ${member.name} ${current ? '' : 'not current, '}at ${seq} of ${target ?? '?'} (leader ${leader.name})`;
    }
  }
  return null;
}

function signal(spec: ServerSpec, sent: ServerSignal): void {
  try {
    process.kill(spec.pid, sent);
  } catch (error) {
    // It may exit between the look at /proc and the signal.
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** What /proc says of the process, and only if it is still this server (a PID can be reused). */
export function processState(spec: { pid: number; configFile: string }): ProcessState {
  if (spec.pid <= 0) return 'gone';
  let stat: string;
  let cmdline: string;
  try {
    stat = readFileSync(`/proc/${spec.pid}/stat`, 'utf8');
    cmdline = readFileSync(`/proc/${spec.pid}/cmdline`, 'utf8');
  } catch {
    return 'gone';
  }
  if (!cmdline.split('\0').includes(spec.configFile)) return 'gone';
  // The state letter follows the command name in parentheses, which may itself hold spaces.
  const letter = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  if (letter === 'Z' || letter === 'X') return 'gone';
  return letter === 'T' || letter === 't' ? 'stopped' : 'running';
}

/** The parts of nats-server's `/jsz` read here. */
interface RaftInfo {
  leader?: string;
  replicas?: { name: string; current: boolean }[];
}
interface Jsz {
  meta_cluster?: RaftInfo;
  account_details?: { stream_detail?: { name: string; cluster?: RaftInfo; state: { last_seq: number }; consumer_detail?: { name: string; cluster?: RaftInfo }[] }[] }[];
}

function raftGroups(jsz: Jsz): RaftGroupView[] {
  const view = (group: string, info: RaftInfo | undefined, lastSeq: number | null = null): RaftGroupView[] =>
    info ? [{ group, leader: info.leader || null, peers: (info.replicas ?? []).map(({ name, current }) => ({ name, current })), lastSeq }] : [];
  const streams = (jsz.account_details ?? []).flatMap((account) => account.stream_detail ?? []);
  return [
    ...view('$meta', jsz.meta_cluster),
    ...streams.flatMap((stream) => [
      ...view(stream.name, stream.cluster, stream.state.last_seq),
      ...(stream.consumer_detail ?? []).flatMap((consumer) => view(`${stream.name}/${consumer.name}`, consumer.cluster)),
    ]),
  ];
}

async function probe(spec: ServerSpec, single: boolean): Promise<NatsServerStatus> {
  const base = { name: spec.name, url: spec.url, pid: spec.pid, process: processState(spec) };
  const down = (detail: string): NatsServerStatus => ({ ...base, healthy: false, detail, metaLeader: null, groups: [] });
  if (base.process !== 'running') return down(`process ${base.process}`);
  try {
    const [health, jsz] = await Promise.all([monitor<{ status: string; error?: string }>(spec, '/healthz'), monitor<Jsz>(spec, '/jsz?streams=true&consumers=true')]);
    const groups = raftGroups(jsz);
    return {
      ...base,
      healthy: health.status === 'ok',
      detail: health.status === 'ok' ? '' : (health.error ?? health.status),
      metaLeader: single ? spec.name : (groups.find((view) => view.group === '$meta')?.leader ?? null),
      groups,
    };
  } catch (error) {
    return down(`monitoring endpoint: ${(error as Error).message}`);
  }
}

async function monitor<T>(spec: ServerSpec, path: string): Promise<T> {
  const response = await fetch(spec.monitorUrl + path, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
  return (await response.json()) as T;
}

/** The end of the server's log, without the warnings our own health probes make it write. */
function logTail(spec: ServerSpec): string {
  const log = existsSync(spec.logFile) ? readFileSync(spec.logFile, 'utf8') : '';
  const lines = log.split('\n').filter((line) => !line.includes('Healthcheck failed'));
  return `--- ${spec.logFile}\n${lines.join('\n').slice(-LOG_TAIL_CHARS)}`;
}

/** Polls `check` until it returns true; a throw from `check` ends the wait at once. */
async function waitFor(what: string, timeoutMs: number, check: () => boolean | Promise<boolean>, explain: () => string = () => ''): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${explain()}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
