/**
 * Governed decision creation under load: POST /v1/decisions through the whole pipeline (bearer
 * auth, rate limit, schema validation, policy evaluation with the bundled decision-gate-v1, and
 * a durable LMDB commit of the decision with its audit entry) against two baselines serving the
 * same JSON with no work at all: a raw uWebSockets.js handler (the ceiling) and a node:http one.
 *
 * The servers run in the harness's process; the load generator in child processes. Each target
 * is measured at maximum throughput (closed loop) and open loop at each fixed rate.
 */
import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Scenario, ScenarioOptions, ScenarioResult, Series } from '../scenario.ts';
import { startNodeHttp, startRawUws } from '../lib/baseline-servers.ts';
import { startCpuProfile } from '../lib/cpu-profile.ts';
import { runLoad } from '../lib/load.ts';
import { describeLoad, seriesFromLoad } from '../lib/load-series.ts';

const DECISION_BODY = JSON.stringify({
  title: 'Deploy web to canary',
  policy: 'decision-gate-v1',
  context: [
    { source: 'risk:score', value: 12 },
    { source: 'deploy:replicas', value: 3 },
  ],
  inputs: ['repo:web', 'ticket:OPS-1234'],
});

interface Target {
  name: string;
  baseline: boolean;
  url: string;
  headers: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * Gatehouse on a fresh data directory, with a sandbox key and rate limits lifted; `sample` is a
 * real response body for the baselines to serve.
 */
async function startGatehouse(workDir: string): Promise<{ target: Target; sample: string }> {
  const { PolicyEngine } = await import('../../policies/engine/index.ts');
  const { startServer } = await import('../../proxy/server.ts');
  const dir = mkdtempSync(path.join(workDir, 'gatehouse-'));
  const engine = await PolicyEngine.open({ sourceDir: fileURLToPath(new URL('../../policies/rego', import.meta.url)), buildDir: path.join(dir, 'policies') });
  // Rate limits are not what is measured here: lift them.
  const unlimited = { ratePerSecond: 1e9, burst: 1e9 };
  const server = await startServer({ dataDir: dir, policies: engine, port: 0, rateLimits: { sandbox: unlimited, production: unlimited } });
  // Issued in-process: how keys are issued over HTTP is not what is measured.
  const { keys, store } = server.services;
  const issued = keys.draft({ env: 'sandbox', scopes: ['decisions:write'], createdBy: server.adminKey.id });
  await store.commit(() => keys.write(issued.record));
  const headers = { authorization: `Bearer ${issued.secret}`, 'content-type': 'application/json' };
  const sample = await fetch(`${server.url}/v1/decisions`, { method: 'POST', headers, body: DECISION_BODY }).then((r) => r.text());
  if (!sample.includes('"status":"created"')) throw new Error(`gatehouse did not create a decision: ${sample}`);
  return {
    sample,
    target: {
      name: 'gatehouse',
      baseline: false,
      url: `${server.url}/v1/decisions`,
      headers,
      stop: async () => {
        await server.close();
        await engine.close();
      },
    },
  };
}

async function baseline(name: string, start: typeof startRawUws, sample: string): Promise<Target> {
  const server = await start(sample);
  return { name, baseline: true, url: `${server.origin}/v1/decisions`, headers: { 'content-type': 'application/json' }, stop: () => server.close() };
}

async function run(options: ScenarioOptions): Promise<ScenarioResult> {
  const series: Series[] = [];
  const profiles: Record<string, string> = {};
  const measure = async (target: Target) => {
    try {
      const recording = options.profile && !target.baseline ? await startCpuProfile() : null;
      for (const rate of [0, ...options.rates]) {
        const load = await runLoad({ url: target.url, headers: target.headers, body: DECISION_BODY, rate, durationS: options.durationS, warmupS: options.warmupS, connections: options.connections });
        options.progress(describeLoad(target.name, rate, load));
        series.push(seriesFromLoad(target.name, target.baseline, rate, load));
      }
      if (recording) profiles.sidecar = await recording.stop(path.join(options.workDir, 'sidecar.cpuprofile'));
    } finally {
      await target.stop();
    }
  };

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
