/**
 * Governed decision creation under load: POST /v1/decisions through the whole pipeline (bearer
 * auth, rate limit, schema validation, policy evaluation with the bundled decision-gate-v1, and
 * a durable LMDB commit of the decision with its audit entry) against two baselines serving the
 * same JSON with no work at all: a raw uWebSockets.js handler (the ceiling) and a node:http one.
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

async function run(options: ScenarioOptions): Promise<ScenarioResult> {
  const series: Series[] = [];
  const profiles: Record<string, string> = {};
  const measure = (target: LoadTarget) => measureTarget(target, { body: DECISION_BODY }, options, { series, profiles }, 'sidecar.cpuprofile');

  options.progress('starting gatehouse (compiling the bundled policies)');
  const { target: gatehouse, sample } = await startGatehouse(options.workDir);
  await measure(gatehouse);
  await measure(await baseline('raw-uws', startRawUws, sample));
  await measure(await baseline('node-http', startNodeHttp, sample));

  const max = (target: string) => series.find((s) => s.target === target && s.mode === 'max')!.throughput;
  const ratio = (a: number, b: number) => Math.round((a / Math.max(b, 1)) * 1000) / 1000;
  return {
    scenario: 'decisions',
    description: scenario.description,
    series,
    metrics: {
      maxThroughputRatio: ratio(max('gatehouse'), max('raw-uws')),
      maxThroughputRatioNodeHttp: ratio(max('gatehouse'), max('node-http')),
    },
    notes: [
      'Request: POST /v1/decisions with a sandbox key, decision-gate-v1 (auto gate), durable commit of the decision and its audit entry; the baselines answer the same JSON without any work.',
      `maxThroughputRatio is Gatehouse's maximum over the raw uWebSockets.js handler's; the raw handler's maximum is itself bounded by the load generator (see the run's generator ceiling).`,
      'Fixed-rate latencies count from when each request was due (open loop, coordinated omission corrected).',
    ],
    profiles,
  };
}

export const scenario: Scenario = {
  name: 'decisions',
  description: 'Governed decision creation (POST /v1/decisions: auth, policy, durable audit) vs a raw uWebSockets.js handler (ceiling) and node:http serving the same JSON: maximum throughput and latency at fixed rates.',
  run,
};
