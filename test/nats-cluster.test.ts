import { existsSync, readFileSync } from 'node:fs';
import { JetStreamApiCodes, jetstream, jetstreamManager, type JetStreamClient, type PubAck } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import t, { type Test } from 'tap';
import { startNatsCluster, type NatsCluster, type NatsServer } from './helpers/nats-cluster.ts';

// The local cluster helper against real nats-server processes: the cluster forms, a replicated
// stream refuses a stale compare-and-set publish, keeps taking writes with one server SIGKILLed,
// the restarted server catches up, and stop() leaves no process and no directory behind.

const STREAM = 'CLUSTER_HELPER_TEST';
// Electing a new stream leader after its server dies takes seconds; this is only an upper bound.
const FAILOVER_BOUND_MS = 30_000;

/** Whether `pid` is (still) a nats-server process, read from /proc independently of the helper. */
function natsServerAt(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]!.endsWith('nats-server');
  } catch {
    return false;
  }
}

/** Retries one publish, deduplicated by `msgID`, until a server acknowledges it or the bound passes. */
async function publishWithin(js: JetStreamClient, subject: string, msgID: string, boundMs: number): Promise<PubAck> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    try {
      return await js.publish(subject, msgID, { msgID, timeout: 2000 });
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** The number of messages `server`'s own replica of the stream holds, from its monitoring endpoint. */
async function replicaMessages(server: NatsServer): Promise<number | undefined> {
  const jsz = (await (await fetch(`${server.monitorUrl}/jsz?streams=true`)).json()) as {
    account_details?: { stream_detail?: { name: string; state: { messages: number } }[] }[];
  };
  const streams = (jsz.account_details ?? []).flatMap((account) => account.stream_detail ?? []);
  return streams.find((stream) => stream.name === STREAM)?.state.messages;
}

function assertAllGone(t: Test, cluster: NatsCluster, pids: number[]): void {
  t.same(pids.filter(natsServerAt), [], 'no nats-server process it started remains');
  t.notOk(existsSync(cluster.dir), 'its directory is removed');
}

t.test('3 servers: a replicated stream, compare-and-set publishes, a server killed and restarted', async (t) => {
  const cluster = await startNatsCluster();
  t.teardown(() => cluster.stop());
  const pids = cluster.servers.map((server) => server.pid);
  t.equal(cluster.urls.length, 3);
  t.equal(new Set(pids).size, 3);
  t.ok(pids.every(natsServerAt), 'each server is a running nats-server process');
  const status = await cluster.status();
  const metaLeader = status[0]!.metaLeader;
  t.ok(metaLeader, 'a meta leader is elected');
  t.ok(status.every((server) => server.healthy && server.metaLeader === metaLeader), 'every server is healthy and names the same meta leader');

  const nc = await connect({ servers: cluster.urls });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const created = await jsm.streams.add({ name: STREAM, subjects: ['cluster-test.>'], num_replicas: 3 });
  t.equal(created.config.num_replicas, 3);
  const js = jetstream(nc);
  t.equal((await js.publish('cluster-test.a', 'one', { expect: { lastSequence: 0 } })).seq, 1);
  t.equal((await js.publish('cluster-test.a', 'two', { expect: { lastSequence: 1 } })).seq, 2);
  await t.rejects(js.publish('cluster-test.a', 'stale', { expect: { lastSequence: 1 } }), { code: JetStreamApiCodes.StreamWrongLastSequence }, 'a publish expecting a stale last sequence is refused');
  t.equal((await jsm.streams.info(STREAM)).state.messages, 2, 'the refused publish stored nothing');

  // Killing the stream's leader makes the remaining two elect another: the hardest single loss.
  const streamLeader = (await jsm.streams.info(STREAM)).cluster?.leader;
  const victim = cluster.servers.find((server) => server.name === streamLeader)!;
  t.ok(victim, 'the stream has a leader among the servers');
  await victim.kill('SIGKILL');
  t.equal(victim.state(), 'gone');
  t.notOk(natsServerAt(pids[cluster.servers.indexOf(victim)]!), 'the killed server is gone');
  const afterKill = await publishWithin(js, 'cluster-test.a', 'after-kill', FAILOVER_BOUND_MS);
  t.equal(afterKill.seq, 3, 'two of three servers still take writes');
  const info = await jsm.streams.info(STREAM);
  t.equal(info.state.messages, 3, 'retries of the publish stored it once');
  t.not(info.cluster?.leader, victim.name, 'another server leads the stream');

  await victim.start();
  t.not(victim.pid, pids[cluster.servers.indexOf(victim)], 'the restart is a new process');
  pids.push(victim.pid);
  t.equal(await replicaMessages(victim), 3, 'the restarted server caught up with what was written while it was down');
  t.equal((await js.publish('cluster-test.a', 'four', { expect: { lastSequence: 3 } })).seq, 4);

  await nc.close();
  await cluster.stop();
  assertAllGone(t, cluster, pids);
});

t.test('3 servers: a SIGSTOPped server is waited out and stop() ends it too', async (t) => {
  const cluster = await startNatsCluster();
  t.teardown(() => cluster.stop());
  const frozen = cluster.servers[2]!;
  await frozen.kill('SIGSTOP');
  t.equal(frozen.state(), 'stopped');
  const status = await cluster.status();
  t.equal(status[2]!.healthy, false);
  t.equal(status[2]!.detail, 'process stopped');
  await frozen.kill('SIGCONT');
  t.equal(frozen.state(), 'running');
  await frozen.kill('SIGSTOP');
  const pids = cluster.servers.map((server) => server.pid);
  await cluster.stop();
  assertAllGone(t, cluster, pids);
});

t.test('1 server: JetStream alone, for quick tests', async (t) => {
  const cluster = await startNatsCluster({ size: 1 });
  t.teardown(() => cluster.stop());
  t.equal(cluster.servers.length, 1);
  const nc = await connect({ servers: cluster.urls });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: STREAM, subjects: ['cluster-test.>'] });
  t.equal((await jetstream(nc).publish('cluster-test.a', 'one', { expect: { lastSequence: 0 } })).seq, 1);
  await nc.close();
  const pids = [cluster.servers[0]!.pid];
  await cluster.stop();
  assertAllGone(t, cluster, pids);
});
