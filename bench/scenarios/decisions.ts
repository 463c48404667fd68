/**
 * Governed decision creation under load: POST /v1/decisions through the whole pipeline (bearer
 * auth, rate limit, schema validation, policy evaluation with the bundled decision-gate-v1, and
 * a durable LMDB commit of the decision with its audit entry) against two baselines serving the
 * same JSON with no work at all: a raw uWebSockets.js handler (the ceiling) and a node:http one.
 * A third baseline, the governed floor (bench/lib/governed-floor.ts), does only the governed
 * work, with Gatehouse's own parts: how close any Gatehouse could come on this machine.
 *
 * The servers run in the harness's process; the load generator in child processes. Each target
 * is measured at maximum throughput (closed loop) and open loop at each fixed rate.
 */
import type { Scenario, ScenarioOptions, ScenarioResult, Series } from '../scenario.ts';
import { startNodeHttp, startRawUws } from '../lib/baseline-servers.ts';
import { DECISION_BODY } from '../lib/decision-body.ts';
import { measureTarget, type LoadTarget } from '../lib/load-target.ts';
import { startScenarioGatehouse } from '../lib/scenario-gatehouse.ts';

/**
 * Gatehouse with a sandbox key allowed to create decisions; `sample` is a real response body for
 * the baselines to serve.
 */
async function startGatehouse(workDir: string): Promise<{ target: LoadTarget; sample: string }> {
  const gatehouse = await startScenarioGatehouse(workDir, { scopes: ['decisions:write'] });
  const headers = { ...gatehouse.auth, 'content-type': 'application/json' };
  const sample = await fetch(`${gatehouse.url}/v1/decisions`, { method: 'POST', headers, body: DECISION_BODY }).then((r) => r.text());
  if (!sample.includes('"status":"created"')) throw new Error(`gatehouse did not create a decision: ${sample}`);
  return { sample, target: { name: 'gatehouse', baseline: false, url: `${gatehouse.url}/v1/decisions`, headers, stop: gatehouse.stop } };
}

async function baseline(name: string, start: typeof startRawUws, sample: string): Promise<LoadTarget> {
  const server = await start(sample);
  return { name, baseline: true, url: `${server.origin}/v1/decisions`, headers: { 'content-type': 'application/json' }, stop: () => server.close() };
}

async function governedFloor(workDir: string): Promise<LoadTarget> {
  // Imported on demand, like Gatehouse: it loads the core and the policy engine.
  const { startGovernedFloor } = await import('../lib/governed-floor.ts');
  const floor = await startGovernedFloor(workDir);
  const headers = { ...floor.auth, 'content-type': 'application/json' };
  const sample = await fetch(`${floor.origin}/v1/decisions`, { method: 'POST', headers, body: DECISION_BODY }).then((r) => r.text());
  if (!sample.includes('"status":"created"')) {
    await floor.close();
    throw new Error(`the governed floor did not create a decision: ${sample}`);
  }
  return { name: 'governed-floor', baseline: true, profileAs: 'floor', url: `${floor.origin}/v1/decisions`, headers, stop: () => floor.close() };
}

async function run(options: ScenarioOptions): Promise<ScenarioResult> {
  const series: Series[] = [];
  const profiles: Record<string, string> = {};
  const measure = (target: LoadTarget) => measureTarget(target, { body: DECISION_BODY }, options, { series, profiles }, 'decisions');

  options.progress('starting gatehouse (compiling the bundled policies)');
  const { target: gatehouse, sample } = await startGatehouse(options.workDir);
  await measure(gatehouse);
  await measure(await baseline('raw-uws', startRawUws, sample));
  await measure(await baseline('node-http', startNodeHttp, sample));
  options.progress('starting the governed floor');
  await measure(await governedFloor(options.workDir));

  const maxRun = (target: string) => series.find((s) => s.target === target && s.mode === 'max')!;
  const max = (target: string) => maxRun(target).throughput;
  const floorBusy = maxRun('governed-floor').machineBusy;
  const ratio = (a: number, b: number) => Math.round((a / Math.max(b, 1)) * 1000) / 1000;
  return {
    scenario: 'decisions',
    description: scenario.description,
    series,
    metrics: {
      maxThroughputRatio: ratio(max('gatehouse'), max('raw-uws')),
      maxThroughputRatioNodeHttp: ratio(max('gatehouse'), max('node-http')),
      floorThroughputRatio: ratio(max('governed-floor'), max('raw-uws')),
      maxThroughputRatioFloor: ratio(max('gatehouse'), max('governed-floor')),
      // All the machine's CPU per floor request, generator included, held constant while the
      // idle share is put to work too: the most a multi-threaded Gatehouse could gain.
      ...(floorBusy ? { floorMachineBusy: floorBusy, floorAllCoresBoundRatio: ratio(max('governed-floor') / floorBusy, max('raw-uws')) } : {}),
    },
    notes: [
      'Request: POST /v1/decisions with a sandbox key, decision-gate-v1 (auto gate), durable commit of the decision and its audit entry; the baselines answer the same JSON without any work.',
      `maxThroughputRatio is Gatehouse's maximum over the raw uWebSockets.js handler's; the raw handler's maximum is itself bounded by the load generator (see the run's generator ceiling).`,
      'governed-floor: a raw uWebSockets.js handler doing only the governed work with Gatehouse\'s own parts (key lookup, schema, decision-gate-v1 through DecisionWorkflow, decision and hash-chained audit entry in one group commit), without the pipeline, idempotency, metrics, events or memory. floorThroughputRatio is its maximum over the raw handler\'s: the most any Gatehouse doing this work could reach on this machine in one thread; maxThroughputRatioFloor is Gatehouse\'s over the floor\'s. floorMachineBusy is the share of the machine\'s CPU (both cores, generator included) busy during the floor\'s maximum run, and floorAllCoresBoundRatio the floor\'s ratio had it put the idle share to work as well at the same CPU per request: a bound for a multi-threaded Gatehouse.',
      'Fixed-rate latencies count from when each request was due (open loop, coordinated omission corrected).',
    ],
    profiles,
  };
}

export const scenario: Scenario = {
  name: 'decisions',
  description:
    'Governed decision creation (POST /v1/decisions: auth, policy, durable audit) vs a raw uWebSockets.js handler (ceiling) and node:http serving the same JSON, and the governed floor (the same governed work alone): maximum throughput and latency at fixed rates.',
  run,
};
