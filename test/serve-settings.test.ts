import t from 'tap';
import { settings } from '../cli/commands/serve.ts';

// `gatehouse serve` options: each flag or GATEHOUSE_* variable, the flag winning, and a clear
// error for a value that cannot be used.

t.test('the unauthenticated-refusal limit', async (t) => {
  t.match(settings(['--rate-unauthenticated', '1/5'], {}), { unauthenticatedLimit: { ratePerSecond: 1, burst: 5 } });
  t.match(settings([], { GATEHOUSE_RATE_LIMIT_UNAUTHENTICATED: '0.5/20' }), { unauthenticatedLimit: { ratePerSecond: 0.5, burst: 20 } });
  t.match(settings([], {}), { unauthenticatedLimit: undefined }, 'the default unless given');
  t.throws(() => settings(['--rate-unauthenticated', 'fast'], {}), /--rate-unauthenticated must look like RATE\/BURST/);
});

t.test('cluster mode', async (t) => {
  t.match(settings([], {}), { cluster: undefined }, 'single node unless NATS URLs are given');
  const clustered = settings(['--nats', 'nats://h1:4222, nats://h2:4222', '--nats-namespace', 'prod'], { GATEHOUSE_NODE_ID: 'node-1', GATEHOUSE_NATS_REPLICAS: '3', GATEHOUSE_NATS_TOKEN: 's3cret' });
  t.match(clustered, { cluster: { servers: ['nats://h1:4222', 'nats://h2:4222'], namespace: 'prod', nodeId: 'node-1', replicas: 3, token: 's3cret', tls: null } });
  t.match(settings([], { GATEHOUSE_NATS_URL: 'nats://h3:4222' }), { cluster: { servers: ['nats://h3:4222'] } });
  t.throws(() => settings(['--nats', 'http://h1:4222'], {}), /--nats takes nats:\/\/host:port URLs/);
  t.throws(() => settings(['--nats', 'nats://h1:4222'], { GATEHOUSE_NATS_REPLICAS: '9' }), /GATEHOUSE_NATS_REPLICAS must be an integer from 1 to 5/);
});

t.test('memory retention', async (t) => {
  t.match(settings([], {}), { memoryDecisions: undefined }, "memory's default unless given");
  t.match(settings(['--memory-decisions', '250000'], {}), { memoryDecisions: 250_000 });
  t.match(settings([], { GATEHOUSE_MEMORY_DECISIONS: '1000' }), { memoryDecisions: 1000 });
  t.match(settings(['--memory-decisions', '7'], { GATEHOUSE_MEMORY_DECISIONS: '1000' }), { memoryDecisions: 7 }, 'the flag wins');
  t.throws(() => settings(['--memory-decisions', '0'], {}), /--memory-decisions must be an integer ≥ 1, got '0'/);
  t.throws(() => settings(['--memory-decisions', 'lots'], {}), /--memory-decisions must be an integer ≥ 1/);
});

t.test('threads', async (t) => {
  t.match(settings([], {}), { threads: 1 }, 'one thread unless asked');
  t.match(settings(['--threads', '2'], {}), { threads: 2 });
  t.match(settings([], { GATEHOUSE_THREADS: '4' }), { threads: 4 }, 'or from the environment');
  t.throws(() => settings(['--threads', '0'], {}), /--threads must be an integer ≥ 1, got '0'/);
  t.throws(() => settings(['--threads', '65'], {}), /--threads must be at most 64/);
  t.throws(() => settings(['--threads', '2', '--nats', 'nats://h1:4222'], {}), /--threads and --nats do not combine/);
});
