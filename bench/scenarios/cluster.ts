/**
 * Cluster mode under load (issue 18): decision creation, POST /v1/decisions with the `decisions`
 * scenario's body, measured in one run for
 *
 * - `single-node`: one instance on LMDB alone (the single-node default, the baseline);
 * - `cluster-1`: one instance in cluster mode, every commit published to the replicated stream;
 * - `cluster-2`: two instances of one cluster, the load split evenly between them;
 * - `floor-cluster-2`: the lean clustered floor (bench/lib/cluster-floor.ts), two processes doing
 *   the governed work and the compare-and-set replication with the least code: what the machine
 *   and NATS allow, against which cluster-2 is judged (`p99RatioFloor`, `cpuPerRequestRatioFloor`);
 * - `floor-cluster-2-apply-order`: the same floor publishing each batch once, without
 *   compare-and-set, its audit chain linked as each process applies the stream: what that other
 *   design of the order would allow (docs/cluster.md);
 *
 * all beside one local 3-server NATS JetStream cluster (test/helpers/nats-cluster.ts; the stream
 * has 3 replicas). Each instance is `gatehouse serve` in a child process of its own
 * (bench/lib/gatehouse-process.ts), pinned with `taskset` to a core of its own (instance i to core
 * i mod cores); the NATS servers and the load generators are pinned to none. Each deployment is
 * measured closed loop (maximum) and open loop at fixed rates (total across its instances), with
 * the Gatehouse processes' CPU per decision over the measured phase, and the NATS servers' CPU per
 * decision: the honest cost of clustering.
 *
 * Then the failover gap (issue 18's fault 1): a steady open-loop load through the two clustered
 * instances while the commit stream's leader is SIGKILLed, writes resume on the two servers left,
 * the server is restarted and the cluster waited for, over and over; for each kill, the longest
 * stretch without a successful write, from the requests' own completion times
 * (bench/lib/steady-load.ts).
 */
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import type { NatsCluster, NatsServer } from '../../test/helpers/nats-cluster.ts';
import type { Scenario, ScenarioOptions, ScenarioResult, Series } from '../scenario.ts';
import { DECISION_BODY } from '../lib/decision-body.ts';
import { canPin, decisionsAnswered, issueLoadKey, startGatehouseProcess, startListeningProcess, type GatehouseProcess } from '../lib/gatehouse-process.ts';
import { describeLoad, seriesFromLoad } from '../lib/load-series.ts';
import { readProcessCpuS } from '../lib/machine-cpu.ts';
import { median, runName } from '../lib/series-metrics.ts';
import { runSplitLoad } from '../lib/split-load.ts';
import { openFailoverFloor } from '../lib/failover-floor.ts';
import { longestSuccessGap, startSteadyLoad, succeeded, type Completion, type SteadyLoad, type SuccessGap } from '../lib/steady-load.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Fixed rates, decisions per second across all instances of a deployment. */
const RATES = { full: [250, 500, 1000], quick: [1000] };
/** The failover load, through the two clustered instances together. */
const FAILOVER_RATE = 500;
const KILLS = { full: 10, quick: 2 };
/** Steady load before each kill, and again after the restarted server is back (ms). */
const SETTLE_MS = { full: 3000, quick: 1000 };
/** How long the cluster runs on two servers once writes have resumed, before the killed one restarts. */
const DEGRADED_MS = { full: 2000, quick: 500 };
/** Bound on writes resuming after a kill; past it the server is restarted anyway and the gap reported open. */
const RESUME_TIMEOUT_MS = 60_000;
/**
 * Bound on each wait for the NATS cluster to be ready (start, and each restart), on a busy
 * machine: a restarted server catches up every Raft group the scenario made, the earlier phases'
 * streams included. At 60 s two runs in a row failed, after the failover floor's fifth and
 * seventh restart; the wait is not part of any reported gap.
 */
const NATS_READY_TIMEOUT_MS = 180_000;

/** One or more instances measured as one target. */
interface Deployment {
  name: string;
  baseline: boolean;
  instances: GatehouseProcess[];
  /** The commit stream's name on NATS, for a clustered deployment. */
  stream: string | null;
  headers: Record<string, string>;
}

const FLOOR = fileURLToPath(new URL('../lib/cluster-floor.ts', import.meta.url));
const REGISTER = fileURLToPath(new URL('../../scripts/register-typescript.js', import.meta.url));

/**
 * The lean clustered floor (bench/lib/cluster-floor.ts): `count` processes replicating through
 * one stream of the run's NATS cluster, pinned like Gatehouse's instances; the key they share.
 */
async function deployFloor(name: string, count: number, nats: NatsCluster, options: ScenarioOptions, pin: boolean, mode: 'cas' | 'apply-order'): Promise<Deployment> {
  const stream = `${name.replace(/[^A-Za-z0-9_-]/g, '_').toUpperCase()}_COMMITS`;
  const instances: GatehouseProcess[] = [];
  let authorization = '';
  try {
    for (let i = 0; i < count; i++) {
      options.progress(`${name}: starting floor process ${i + 1} of ${count}`);
      const core = pin ? i % availableParallelism() : null;
      const argv = [process.execPath, `--import=${REGISTER}`, FLOOR, options.workDir, nats.urls.join(','), stream, `n${i + 1}`, mode];
      const started = await startListeningProcess(name, argv, {}, path.join(options.workDir, `${name}-${i + 1}.log`), core);
      authorization = /listening on \S+ (Bearer \S+)/.exec(started.output())![1]!;
      instances.push({ url: started.url, pid: started.pid, core, stop: started.stop });
    }
    return { name, baseline: true, instances, stream, headers: { authorization, 'content-type': 'application/json' } };
  } catch (error) {
    await Promise.all(instances.map((instance) => instance.stop()));
    throw error;
  }
}

/** `count` instances, started one after another (the first creates the stream and bucket), and a key for the load. */
async function deploy(name: string, count: number, nats: NatsCluster | null, options: ScenarioOptions, pin: boolean): Promise<Deployment> {
  const adminKey = `gh_live_${randomBytes(24).toString('base64url')}`;
  const namespace = name.replace(/[^A-Za-z0-9_-]/g, '_');
  const instances: GatehouseProcess[] = [];
  try {
    for (let i = 0; i < count; i++) {
      options.progress(`${name}: starting instance ${i + 1} of ${count} (gatehouse serve${nats ? ' --nats' : ''}, compiling the bundled policies)`);
      instances.push(
        await startGatehouseProcess({
          dir: path.join(options.workDir, `${name}-${i + 1}`),
          adminKey,
          core: pin ? i % availableParallelism() : null,
          ...(nats ? { cluster: { urls: nats.urls, namespace, nodeId: `${name}-${i + 1}` } } : {}),
        }),
      );
    }
    const headers = await issueLoadKey(instances, adminKey);
    // ClusterLink's naming of the commit stream (core/cluster/cluster-link.ts).
    return { name, baseline: nats === null, instances, stream: nats ? `${namespace.toUpperCase()}_COMMITS` : null, headers };
  } catch (error) {
    await Promise.all(instances.map((instance) => instance.stop()));
    throw error;
  }
}

const natsCpuS = (nats: NatsCluster) => nats.servers.reduce((sum, server) => sum + (readProcessCpuS(server.pid) ?? Number.NaN), 0);
const answered = async (deployment: Deployment) => (await Promise.all(deployment.instances.map(decisionsAnswered))).reduce((a, b) => a + b, 0);

/**
 * Every run of `deployment`: maximum, then each fixed rate. The NATS servers' CPU is read around
 * the whole load run (warm-up included) and divided by the decisions the instances answered over
 * the same stretch, read from their request counters: the generator's phases are not visible
 * from here, and both readings cover the same requests.
 */
async function measure(deployment: Deployment, nats: NatsCluster | null, rates: number[], options: ScenarioOptions, series: Series[], metrics: Record<string, number>): Promise<void> {
  const targets = deployment.instances.map((instance) => ({ url: `${instance.url}/v1/decisions`, pid: instance.pid }));
  for (const rate of [0, ...rates]) {
    const before = nats ? { cpuS: natsCpuS(nats), decisions: await answered(deployment) } : null;
    const load = await runSplitLoad(targets, { headers: deployment.headers, body: DECISION_BODY, rate, durationS: options.durationS, warmupS: options.warmupS, connections: options.connections });
    const s = seriesFromLoad(deployment.name, deployment.baseline, rate, load);
    series.push(s);
    let natsNote = '';
    if (nats && before) {
      const decisions = (await answered(deployment)) - before.decisions;
      const usPerDecision = Math.round(((natsCpuS(nats) - before.cpuS) / Math.max(decisions, 1)) * 1e7) / 10;
      if (Number.isFinite(usPerDecision)) {
        metrics[`${deployment.name}.${runName(s)}.natsCpuUsPerRequest`] = usPerDecision;
        natsNote = `, NATS CPU ${usPerDecision} µs/decision`;
      }
    }
    options.progress(describeLoad(deployment.name, rate, load) + natsNote);
  }
}

/** The server leading `stream`'s Raft group now (asked again while an election is on, 10 s at most). */
async function streamLeader(nats: NatsCluster, stream: string): Promise<NatsServer> {
  for (const deadline = Date.now() + 10_000; ; ) {
    const reports = await nats.status();
    const leader = reports.find((report) => report.groups.some((group) => group.group === stream && group.leader === report.name));
    if (leader) return nats.servers.find((server) => server.name === leader.name)!;
    if (Date.now() > deadline) throw new Error(`no leader of stream ${stream}: ${JSON.stringify(reports.map((r) => ({ name: r.name, detail: r.detail, groups: r.groups.map((g) => g.group) })))}`);
    await sleep(100);
  }
}

/** Resolves once a write completed after `since` succeeded, or `timeoutMs` passed; says which. */
async function writesResumed(completions: readonly Completion[], since: number, timeoutMs: number): Promise<boolean> {
  let seen = 0;
  for (const deadline = performance.now() + timeoutMs; performance.now() < deadline; await sleep(5)) {
    for (; seen < completions.length; seen++) {
      const c = completions[seen]!;
      if (c.at > since && succeeded(c)) return true;
    }
  }
  return false;
}

interface KillRecord {
  server: string;
  killedAt: number;
  until: number;
  resumed: boolean;
}

/** What a failover measurement kills the leader under: a steady load through some writers of one stream. */
interface FailoverSubject {
  /** How the notes name it. */
  name: string;
  /** The metrics' prefix: `failover` for Gatehouse, `failover.floor` for the floor. */
  prefix: string;
  stream: string;
  /** How many writers share the load (a gap is also measured through each alone). */
  writers: number;
  /** What one write is, for the notes. */
  writes: string;
  startLoad(): Promise<SteadyLoad>;
}

/**
 * Issue 18's fault 1 as a measurement: steady load at FAILOVER_RATE through the subject's
 * writers; `kills` times, SIGKILL the stream's leader, wait for writes to resume, let the cluster
 * run degraded a while, restart the server and wait for the cluster to be ready, let the load
 * settle. Each kill's gap is the longest stretch without a successful write from the kill to the
 * end of its settling, counted from the last success before it.
 */
async function measureFailover(subject: FailoverSubject, nats: NatsCluster, options: ScenarioOptions, metrics: Record<string, number>): Promise<string[]> {
  const mode = options.quick ? 'quick' : 'full';
  const kills = KILLS[mode];
  options.progress(`failover: ${FAILOVER_RATE} writes/s through ${subject.name}'s ${subject.writers} writers, ${kills} kills of the stream leader`);
  const load = await subject.startLoad();
  const records: KillRecord[] = [];
  const started = performance.now();
  let completions: Completion[];
  try {
    await sleep(SETTLE_MS[mode]);
    for (let k = 0; k < kills; k++) {
      const victim = await streamLeader(nats, subject.stream);
      const killedAt = performance.now();
      await victim.kill('SIGKILL');
      const resumed = await writesResumed(load.completions, killedAt, RESUME_TIMEOUT_MS);
      await sleep(DEGRADED_MS[mode]);
      await victim.start();
      await sleep(SETTLE_MS[mode]);
      records.push({ server: victim.name, killedAt, until: performance.now(), resumed });
      const { gap, instanceGapMs } = killGaps(load.completions, subject.writers, records.at(-1)!);
      options.progress(`failover (${subject.name}): kill ${k + 1}/${kills} (${victim.name}, the stream leader): longest gap in successful writes ${Math.round(gap.gapMs)} ms${gap.closed ? '' : ' (still open)'}, through one writer ${Math.round(instanceGapMs)} ms`);
    }
  } finally {
    completions = await load.stop();
  }
  const round = (ms: number) => Math.round(ms * 10) / 10;
  const ended = records.at(-1)?.until ?? started;
  const gaps = records.map((r) => killGaps(completions, subject.writers, r));
  const gapMs = gaps.map((g) => round(g.gap.gapMs));
  const instanceGapMs = gaps.map((g) => round(g.instanceGapMs));
  const statuses: Record<string, number> = {};
  for (const c of completions) statuses[c.status ?? 'failed'] = (statuses[c.status ?? 'failed'] ?? 0) + 1;
  const p = subject.prefix;
  Object.assign(metrics, {
    [`${p}.kills`]: records.length,
    [`${p}.maxGapMs`]: Math.max(...gapMs),
    [`${p}.medianGapMs`]: round(median(gapMs)),
    [`${p}.maxInstanceGapMs`]: Math.max(...instanceGapMs),
    [`${p}.medianInstanceGapMs`]: round(median(instanceGapMs)),
    [`${p}.requests`]: completions.length,
    [`${p}.throughput`]: Math.round((completions.filter((c) => succeeded(c) && c.at <= ended).length / (ended - started)) * 1000),
    [`${p}.errors`]: completions.filter((c) => !succeeded(c)).length,
    [`${p}.unresumed`]: records.filter((r) => !r.resumed).length,
  });
  records.forEach((_, i) => Object.assign(metrics, { [`${p}.kill${i + 1}.gapMs`]: gapMs[i], [`${p}.kill${i + 1}.instanceGapMs`]: instanceGapMs[i] }));
  const perKill = records.map((r, i) => `${gapMs[i]} ms (${r.server}${gaps[i]!.gap.closed ? '' : ', still open'}; the longer writer ${instanceGapMs[i]} ms)`);
  return [
    `${p}: ${FAILOVER_RATE} ${subject.writes}/s open loop through ${subject.name}'s ${subject.writers} writers (alternately), ${records.length} SIGKILLs of the stream's leader, each followed by a wait for a successful write (${RESUME_TIMEOUT_MS / 1000} s at most), ${DEGRADED_MS[mode]} ms on two servers, a restart of the killed server until the cluster was ready, and ${SETTLE_MS[mode]} ms of steady load. Per kill, the longest time between two successive successful writes (through either writer) from the kill to the end of its settling: ${perKill.join(', ')}; max ${Math.max(...gapMs)} ms, median ${round(median(gapMs))} ms; through one writer alone: max ${Math.max(...instanceGapMs)} ms, median ${round(median(instanceGapMs))} ms. Answers: ${JSON.stringify(statuses)} of ${completions.length} writes completed.`,
  ];
}

/** Gatehouse's failover subject: decision creation through a clustered deployment's instances. */
function gatehouseFailover(deployment: Deployment, options: ScenarioOptions): FailoverSubject {
  return {
    name: deployment.name,
    prefix: 'failover',
    stream: deployment.stream!,
    writers: deployment.instances.length,
    writes: 'decisions',
    startLoad: () =>
      startSteadyLoad({
        urls: deployment.instances.map((instance) => `${instance.url}/v1/decisions`),
        headers: deployment.headers,
        body: DECISION_BODY,
        rate: FAILOVER_RATE,
        connectionsPerUrl: Math.max(1, Math.floor(options.connections / deployment.instances.length)),
      }),
  };
}

/**
 * The same kills under bare JetStream compare-and-set publishes (bench/lib/failover-floor.ts):
 * how long the NATS cluster itself takes to write again, in the same run.
 */
async function measureFailoverFloor(nats: NatsCluster, options: ScenarioOptions, metrics: Record<string, number>): Promise<string[]> {
  const floor = await openFailoverFloor(nats.urls, 'FAILOVER_FLOOR');
  try {
    const notes = await measureFailover(
      { name: 'the JetStream floor', prefix: 'failover.floor', stream: floor.stream, writers: 2, writes: 'compare-and-set publishes', startLoad: async () => floor.start(FAILOVER_RATE) },
      nats,
      options,
      metrics,
    );
    const ratio = (a: string) => Math.round((metrics[`failover.${a}`]! / Math.max(metrics[`failover.floor.${a}`]!, 1)) * 1000) / 1000;
    if (metrics['failover.medianGapMs'] !== undefined) {
      metrics['failover.medianGapRatioFloor'] = ratio('medianGapMs');
      metrics['failover.maxGapRatioFloor'] = ratio('maxGapMs');
    }
    return notes;
  } finally {
    await floor.close();
  }
}

/**
 * A kill's longest gap in successful writes through any instance, and through one instance alone:
 * the cluster as a whole may write on through one instance while the other is stalled.
 */
function killGaps(completions: readonly Completion[], instances: number, kill: KillRecord): { gap: SuccessGap; instanceGapMs: number } {
  const perInstance = Array.from({ length: instances }, (_, i) => longestSuccessGap(completions, kill.killedAt, kill.until, i).gapMs);
  return { gap: longestSuccessGap(completions, kill.killedAt, kill.until), instanceGapMs: Math.max(...perInstance) };
}

async function run(options: ScenarioOptions): Promise<ScenarioResult> {
  const mode = options.quick ? 'quick' : 'full';
  const rates = RATES[mode];
  const pin = canPin();
  const series: Series[] = [];
  const metrics: Record<string, number> = {};
  const notes: string[] = [];
  // Imported here: listing the scenarios (--help) should not load more than it needs.
  const { startNatsCluster } = await import('../../test/helpers/nats-cluster.ts');
  options.progress('starting a 3-server NATS JetStream cluster');
  const nats = await startNatsCluster({ size: 3, dir: path.join(options.workDir, 'nats'), readyTimeoutMs: NATS_READY_TIMEOUT_MS });
  try {
    const targets = [
      ['single-node', 1, false],
      ['floor-cluster-2', 2, 'cas'],
      ['floor-cluster-2-apply-order', 2, 'apply-order'],
      ['cluster-1', 1, true],
      ['cluster-2', 2, true],
    ] as const;
    for (const [name, count, clustered] of targets) {
      const deployment = typeof clustered === 'string' ? await deployFloor(name, count, nats, options, pin, clustered) : await deploy(name, count, clustered ? nats : null, options, pin);
      try {
        await measure(deployment, clustered ? nats : null, rates, options, series, metrics);
        if (clustered === true && count === 2) notes.push(...(await measureFailover(gatehouseFailover(deployment, options), nats, options, metrics)));
      } finally {
        await Promise.all(deployment.instances.map((instance) => instance.stop()));
      }
    }
    notes.push(...(await measureFailoverFloor(nats, options, metrics)));
  } finally {
    await nats.stop();
  }

  const ratio = (a: number, b: number) => Math.round((a / Math.max(b, 1e-9)) * 1000) / 1000;
  // Cluster mode against the lean clustered floor doing the same replication, at each run.
  for (const s of series.filter((s) => s.target === 'cluster-2')) {
    const floor = series.find((f) => f.target === 'floor-cluster-2' && runName(f) === runName(s));
    if (!floor) continue;
    metrics[`p99RatioFloor.cluster-2.${runName(s)}`] = ratio(s.latencyMs.p99, floor.latencyMs.p99);
    if (s.cpuUsPerRequest !== undefined && floor.cpuUsPerRequest) metrics[`cpuPerRequestRatioFloor.cluster-2.${runName(s)}`] = ratio(s.cpuUsPerRequest, floor.cpuUsPerRequest);
  }
  const single = (run: string) => series.find((s) => s.target === 'single-node' && runName(s) === run);
  for (const s of series.filter((s) => s.target !== 'single-node' && !s.baseline)) {
    const run = runName(s);
    const base = single(run);
    if (run === 'max' && base) metrics[`maxThroughputRatioSingle.${s.target}`] = ratio(s.throughput, base.throughput);
    const natsCpu = metrics[`${s.target}.${run}.natsCpuUsPerRequest`];
    if (s.cpuUsPerRequest !== undefined && natsCpu !== undefined && base?.cpuUsPerRequest) {
      metrics[`cpuPerRequestRatioSingle.${s.target}.${run}`] = ratio(s.cpuUsPerRequest + natsCpu, base.cpuUsPerRequest);
    }
  }
  return {
    scenario: 'cluster',
    description: scenario.description,
    series,
    metrics,
    notes: [
      'Request: POST /v1/decisions with a sandbox key and the decisions scenario\'s body (decision-gate-v1, auto gate), no Idempotency-Key. Each instance is `gatehouse serve --signatures off` with rate limits lifted, in a child process of its own; single-node on LMDB alone, cluster-1 and cluster-2 with --nats on the run\'s 3-server NATS cluster (stream and bucket with 3 replicas), each deployment on a namespace of its own, so each starts from an empty stream.',
      pin
        ? `Pinning: each Gatehouse process is pinned with taskset to core (instance number − 1) mod ${availableParallelism()}: single-node and cluster-1 to core 0, cluster-2's instances to cores 0 and 1. The NATS servers and the load generators are pinned to none and share the cores with them.`
        : 'Pinning: taskset is not available here, so no process is pinned to a core.',
      `Runs: closed loop (max, ${options.connections} connections in all) and open loop at ${rates.join(', ')} decisions/s, rate and connections split evenly between a deployment's instances (one generator process per instance, started together).`,
      'cpuUsPerRequest (per series) is the Gatehouse processes\' CPU time together (user and system, every thread, /proc/<pid>/stat) over the measured phase and until each went idle, per decision answered, as in the other scenarios. <target>.<run>.natsCpuUsPerRequest is the three NATS servers\' CPU time together over the whole load run (warm-up included) per decision the instances answered 200 over the same stretch (their request counters): what clustering costs beside Gatehouse. cpuPerRequestRatioSingle.<target>.<run> is Gatehouse\'s and NATS\'s together over single-node\'s Gatehouse CPU at the same run; maxThroughputRatioSingle.<target> the maximum throughput over single-node\'s.',
      'Fixed-rate latencies count from when each request was due (open loop, coordinated omission corrected). --profile does not apply: the instances are child processes.',
      ...notes,
    ],
    profiles: {},
  };
}

export const scenario: Scenario = {
  name: 'cluster',
  description:
    'Cluster mode: decision creation on one instance on LMDB alone, one clustered instance and two (each pinned to a core) on a local 3-server NATS JetStream cluster: maximum throughput, latency at fixed rates, Gatehouse and NATS CPU per decision, and the longest gap in successful writes when the stream leader is SIGKILLed under load.',
  run,
};
