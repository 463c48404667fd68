/**
 * A local NATS JetStream cluster for development: real `nats-server` processes on 127.0.0.1 with
 * ephemeral ports and their stores, configs and logs in one directory, left running in the
 * background until `stop`, which ends them and removes the directory (test/helpers/nats-cluster.ts
 * does the work; the tests use it too).
 *
 *   node --import=tsx scripts/nats-cluster.ts start [--size 3|1] [--dir DIR]
 *   node --import=tsx scripts/nats-cluster.ts status [--dir DIR]
 *   node --import=tsx scripts/nats-cluster.ts stop [--dir DIR]
 *
 * DIR is $TMPDIR/gatehouse-nats-cluster unless given. `start` prints the client URLs as
 * `gatehouse serve --nats` and GATEHOUSE_NATS_URL take them. `status` exits 1 unless every
 * server is healthy.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { attachNatsCluster, startNatsCluster } from '../test/helpers/nats-cluster.ts';

const USAGE = 'usage: node --import=tsx scripts/nats-cluster.ts start [--size 3|1] [--dir DIR] | status [--dir DIR] | stop [--dir DIR]';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { size: { type: 'string', default: '3' }, dir: { type: 'string', default: join(tmpdir(), 'gatehouse-nats-cluster') } },
});
const [command, ...extra] = positionals;
const dir = values.dir!;
const existing = attachNatsCluster(dir);

function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

if (extra.length > 0) fail(USAGE);
switch (command) {
  case 'start': {
    if (values.size !== '3' && values.size !== '1') fail(`--size is 3 or 1, not ${values.size}`);
    if (existing?.servers.some((server) => server.state() !== 'gone')) fail(`a cluster is already running in ${dir}; stop it first`);
    // What a cluster whose processes are all gone (a reboot, a kill) left behind.
    await existing?.stop();
    const cluster = await startNatsCluster({ size: values.size === '3' ? 3 : 1, dir, detached: true });
    for (const server of cluster.servers) console.log(`${server.name}  pid ${server.pid}  ${server.url}  monitor ${server.monitorUrl}`);
    console.log(`started in ${dir}\nGATEHOUSE_NATS_URL=${cluster.urls.join(',')}`);
    break;
  }
  case 'status': {
    if (!existing) fail(`no cluster in ${dir}`);
    const status = await existing.status();
    for (const server of status) {
      const health = server.healthy ? 'healthy' : `not healthy: ${server.detail}`;
      console.log(`${server.name}  pid ${server.pid}  ${server.process}  ${server.url}  meta leader ${server.metaLeader ?? '-'}  ${health}`);
    }
    if (!status.every((server) => server.healthy)) process.exit(1);
    break;
  }
  case 'stop':
    if (!existing) fail(`no cluster in ${dir}`);
    await existing.stop();
    console.log(`stopped; ${dir} removed`);
    break;
  default:
    fail(USAGE);
}
