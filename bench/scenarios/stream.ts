/**
 * Events out of Gatehouse: fan-out of decision events over `WS /v1/streaming` to many
 * subscribers, and signed webhook deliveries to a local receiver.
 *
 * - Stream: N subscribers (100 and 1,000; quick: 10 and 100) on `decisions`, in a child process
 *   (bench/lib/stream-subscribers.ts) so that receiving does not share the sidecar's event loop.
 *   Decisions are created open loop at fixed rates; latency runs from the moment a POST is sent to
 *   the moment its `decision.created` event reaches each subscriber (every subscriber's receipt is
 *   one sample), so it includes the policy, the durable commit and the publish. The baseline is
 *   the same subscribers and POSTs against bare uWebSockets.js pub/sub publishing a same-sized
 *   event at once (bench/lib/baseline-servers.ts): the floor set by the HTTP client, the sockets
 *   and one process parsing every subscriber's copy in turn.
 * - Webhooks: one endpoint, a receiver in the same child process; a burst of decisions created
 *   with bounded concurrency; deliveries per second from the first POST to the last receipt, and
 *   the same POST-to-receipt latency. Deliveries to one endpoint are sequential by design (order is
 *   kept per endpoint), so this is the per-endpoint rate: round trip plus one commit per delivery.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Scenario, ScenarioOptions, ScenarioResult, Series } from '../scenario.ts';
import { startRawUwsPublisher } from '../lib/baseline-servers.ts';
import { decodeHistogram, summarise } from '../lib/histogram.ts';
import { startScenarioGatehouse } from '../lib/scenario-gatehouse.ts';

const SUBSCRIBERS = fileURLToPath(new URL('../lib/stream-subscribers.ts', import.meta.url));
const nowUs = () => Math.round((performance.timeOrigin + performance.now()) * 1000);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Gatehouse {
  url: string;
  /** The key's secret, for the subscribers to authenticate with. */
  secret: string;
  headers: Record<string, string>;
  stop(): Promise<void>;
}

/** Gatehouse with a key that creates decisions, subscribes and manages webhooks, which may reach 127.0.0.1. */
async function startGatehouse(workDir: string): Promise<Gatehouse> {
  const gatehouse = await startScenarioGatehouse(
    workDir,
    { scopes: ['decisions:read', 'decisions:write', 'stream:subscribe', 'webhooks:manage'] },
    {
      // A thousand subscribers each buffering a burst: give them room before they count as slow.
      streaming: { maxBackpressureBytes: 16 * 1024 * 1024 },
      webhooks: { allow: ['127.0.0.1'] },
    },
  );
  return { url: gatehouse.url, secret: gatehouse.secret, headers: { ...gatehouse.auth, 'content-type': 'application/json' }, stop: gatehouse.stop };
}

/** Creates one decision; its title carries when it was sent (or `warmup`). Resolves to whether it was created. */
async function createDecision(gatehouse: Pick<Gatehouse, 'url' | 'headers'>, measured: boolean): Promise<boolean> {
  const title = measured ? `bench ${nowUs()}` : 'warmup';
  const response = await fetch(`${gatehouse.url}/v1/decisions`, {
    method: 'POST',
    headers: gatehouse.headers,
    body: JSON.stringify({ title, policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 5 }] }),
  }).catch(() => null);
  await response?.arrayBuffer();
  return response?.status === 200;
}

/** Open loop: one decision every 1/rate s for `seconds`, not waiting for answers. Resolves to how many were created. */
async function createAtRate(gatehouse: Pick<Gatehouse, 'url' | 'headers'>, rate: number, seconds: number, measured: boolean): Promise<number> {
  const total = Math.max(1, Math.round(rate * seconds));
  const start = performance.now();
  const pending: Promise<boolean>[] = [];
  for (let i = 0; i < total; i++) {
    const wait = start + (i * 1000) / rate - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(createDecision(gatehouse, measured));
  }
  return (await Promise.all(pending)).filter(Boolean).length;
}

/** The child process and a typed request/response over its IPC channel. */
function startSubscribers(): { child: ChildProcess; ask<T>(command: object, answer: string): Promise<T> } {
  const child = fork(SUBSCRIBERS, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return {
    child,
    ask: <T>(command: object, answer: string) =>
      new Promise<T>((resolve, reject) => {
        const onMessage = (message: { type: string }) => {
          if (message.type !== answer) return;
          child.off('message', onMessage);
          child.off('exit', onExit);
          resolve(message as T);
        };
        const onExit = (code: number | null) => reject(new Error(`the subscriber process exited (${code}) while waiting for ${answer}`));
        child.on('message', onMessage);
        child.once('exit', onExit);
        child.send(command);
      }),
  };
}

async function run(options: ScenarioOptions): Promise<ScenarioResult> {
  const series: Series[] = [];
  const metrics: Record<string, number> = {};
  const notes: string[] = [];
  // Quick runs keep 100 so the target's figure (`fanout100.p99Ms`) is measured there too.
  const fanOuts = options.quick ? [10, 100] : [100, 1000];
  const rates = options.quick ? [20] : [50, 200];

  options.progress('starting gatehouse (compiling the bundled policies)');
  const gatehouse = await startGatehouse(options.workDir);
  const floor = await startRawUwsPublisher();
  const subscribers = startSubscribers();
  try {
    const targets = [
      { name: 'gatehouse-stream', baseline: false, server: gatehouse },
      { name: 'raw-uws-pubsub', baseline: true, server: { url: floor.origin, secret: 'none', headers: { 'content-type': 'application/json' } } },
    ];
    for (const count of fanOuts) {
      for (const target of targets) {
        await subscribers.ask({ type: 'subscribe', url: target.server.url, key: target.server.secret, count }, 'ready');
        for (const rate of rates) {
          await createAtRate(target.server, rate, options.warmupS, false);
          const started = performance.now();
          const created = await createAtRate(target.server, rate, options.durationS, true);
          const expected = created * count;
          const result = await subscribers.ask<{ histogram: string; received: number }>({ type: 'collect', expected, timeoutMs: 30_000 }, 'stream');
          const seconds = (performance.now() - started) / 1000;
          const latencyMs = summarise(decodeHistogram(result.histogram));
          const deliveredPerS = Math.round(result.received / seconds);
          series.push({
            target: `${target.name}-${count}`,
            baseline: target.baseline,
            mode: 'rate',
            rate,
            throughput: deliveredPerS,
            latencyMs,
            operations: result.received,
            errors: Math.max(0, expected - result.received),
            histogram: result.histogram,
          });
          const prefix = target.baseline ? `floor.fanout${count}.rate${rate}` : `stream.fanout${count}.rate${rate}`;
          metrics[`${prefix}.p99Ms`] = latencyMs.p99;
          metrics[`${prefix}.deliveredPerS`] = deliveredPerS;
          metrics[`${prefix}.eventsPerS`] = Math.round(created / seconds);
          options.progress(`${target.name}: ${count} subscribers at ${rate} decisions/s: ${deliveredPerS} events/s delivered, p99 ${latencyMs.p99} ms, ${expected - result.received} missing`);
        }
        await subscribers.ask({ type: 'disconnect' }, 'disconnected');
      }
    }

    const { url: receiver } = await subscribers.ask<{ url: string }>({ type: 'receiver' }, 'receiver');
    const endpoint = await fetch(`${gatehouse.url}/v1/webhooks/config`, {
      method: 'POST',
      headers: gatehouse.headers,
      body: JSON.stringify({ url: receiver, events: ['decision.created'] }),
    });
    if (endpoint.status !== 201) throw new Error(`creating the webhook endpoint failed: ${endpoint.status} ${await endpoint.text()}`);
    const burst = options.quick ? 50 : 2000;
    const started = performance.now();
    let next = 0;
    let created = 0;
    // Thirty-two creators in flight: enough to queue deliveries faster than one endpoint drains them.
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < burst) {
          next++;
          if (await createDecision(gatehouse, true)) created++;
        }
      }),
    );
    const hooks = await subscribers.ask<{ histogram: string; received: number; spanMs: number }>({ type: 'collectWebhooks', expected: created, timeoutMs: 120_000 }, 'webhooks');
    const seconds = (performance.now() - started) / 1000;
    const latencyMs = summarise(decodeHistogram(hooks.histogram));
    const perS = Math.round(hooks.received / seconds);
    series.push({ target: 'gatehouse-webhooks', baseline: false, mode: 'max', rate: null, throughput: perS, latencyMs, operations: hooks.received, errors: created - hooks.received, histogram: hooks.histogram });
    metrics['webhooks.deliveriesPerS'] = perS;
    metrics['webhooks.p99Ms'] = latencyMs.p99;
    options.progress(`webhooks: ${hooks.received} of ${created} delivered in ${seconds.toFixed(1)} s (${perS}/s), p99 ${latencyMs.p99} ms`);
  } finally {
    subscribers.child.send({ type: 'close' });
    await floor.close();
    await gatehouse.stop();
  }
  // The target's figure: 100 subscribers at the highest fixed rate, the hardest load they get.
  const topRate = Math.max(...rates);
  metrics['fanout100.p99Ms'] = metrics[`stream.fanout100.rate${topRate}.p99Ms`]!;
  const floorP99 = metrics[`floor.fanout100.rate${topRate}.p99Ms`];
  if (floorP99) metrics['fanout100.p99RatioFloor'] = Math.round((metrics['fanout100.p99Ms'] / floorP99) * 100) / 100;
  notes.push(
    `fanout100.p99Ms is stream.fanout100.rate${topRate}.p99Ms: 100 subscribers at the highest fixed rate, ${topRate} decisions/s; fanout100.p99RatioFloor divides it by the raw uWS pub/sub floor's p99 at that rate and fan-out.`,
    'Stream latency: from sending POST /v1/decisions to each subscriber receiving its decision.created event; every subscriber\'s receipt is one sample. Subscribers run in a separate process on the same machine.',
    'raw-uws-pubsub is the floor: the same subscribers and POSTs against bare uWebSockets.js pub/sub publishing a same-sized event at once; floor.fanout<N>.rate<R>.p99Ms beside stream.fanout<N>.rate<R>.p99Ms shows what Gatehouse adds.',
    'Stream throughput: events delivered per second summed over subscribers; eventsPerS is the decisions created per second. errors counts receipts still missing 30 s after the last decision.',
    'Webhooks: one endpoint, deliveries in order and one at a time (per-endpoint ordering), signed with Standard Webhooks; throughput from the first POST to the last receipt.',
  );
  return { scenario: 'stream', description: scenario.description, series, metrics, notes, profiles: {} };
}

export const scenario: Scenario = {
  name: 'stream',
  description: 'Decision events fanned out over WS /v1/streaming to 100 and 1,000 subscribers (events/s, p99 from POST to receipt) and webhook deliveries per second to a local receiver.',
  run,
};
