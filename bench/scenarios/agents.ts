/**
 * Governed agents under load: POST /v1/agents/runs/{runId}/tool-calls on the allow path through
 * Gatehouse (API-key authentication, rate limit, schema check of the call and of the tool's
 * input, the bundled agent-tools-v1 policy, the step and its events committed, the tool's
 * upstream called over keep-alive, the outcome committed, an audit entry) against the same
 * upstream called directly with the same input. Both are measured at maximum throughput and
 * open loop at each fixed rate; the overhead is Gatehouse's percentile minus the direct call's.
 *
 * Each load run opens a fresh agent run with `maxToolCalls` at its cap, so no load run meets the
 * limit another one used up; calls within one agent run execute concurrently.
 */
import { MAX_TOOL_CALLS } from '../../core/agents/limits.ts';
import { addedLatency, findSeries, throughputRatio } from '../lib/added-latency.ts';
import { startNodeHttp } from '../lib/baseline-servers.ts';
import { measureTarget, type LoadTarget } from '../lib/load-target.ts';
import { startScenarioGatehouse } from '../lib/scenario-gatehouse.ts';
import type { Scenario, ScenarioOptions, ScenarioResult, Series } from '../scenario.ts';

const TOOL = 'lookup';
const TOOL_PATH = '/tools/lookup';
const INPUT = { query: 'widget', limit: 10 };
const UPSTREAM_BODY = JSON.stringify({ items: [{ id: 1, name: 'widget' }, { id: 2, name: 'gadget' }] });
const JSON_HEADERS = { 'content-type': 'application/json' };

/** What one load run may spend of an agent run: its calls at the cap, a day of wall time. */
const RUN_LIMITS = { maxToolCalls: MAX_TOOL_CALLS, maxWallMs: 24 * 3600 * 1000 };

/**
 * Gatehouse with a sandbox key that registers the tool and its agent (scope `admin`) and calls
 * it (`agents:run`), checked once end to end; each load run gets a fresh agent run.
 */
async function startGatehouse(workDir: string, upstream: string): Promise<LoadTarget> {
  const gatehouse = await startScenarioGatehouse(workDir, { scopes: ['admin', 'agents:run'] }, { toolAllow: ['127.0.0.1'] });
  const headers = { ...gatehouse.auth, ...JSON_HEADERS };
  const post = async (path: string, body: unknown, expected: number) => {
    const response = await fetch(`${gatehouse.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    const text = await response.text();
    if (response.status !== expected) throw new Error(`POST ${path}: ${response.status} ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  try {
    await post(
      '/v1/agents/tools',
      {
        name: TOOL,
        description: 'looks items up',
        inputSchema: { type: 'object', properties: { query: { type: 'string' }, limit: { type: 'integer', minimum: 1 } }, required: ['query'], additionalProperties: false },
        upstream: { method: 'POST', url: `${upstream}${TOOL_PATH}` },
        scopes: [],
        policy: 'agent-tools-v1',
      },
      201,
    );
    const agent = await post('/v1/agents', { name: 'bench-agent', scopes: [], tools: [TOOL] }, 201);
    const urlForLoad = async () => {
      const run = await post('/v1/agents/runs', { agentId: agent.id, limits: RUN_LIMITS }, 201);
      return `${gatehouse.url}/v1/agents/runs/${run.id as string}/tool-calls`;
    };
    const url = await urlForLoad();
    const sample = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ tool: TOOL, input: INPUT }) }).then((r) => r.text());
    if (!sample.includes('"state":"executed"')) throw new Error(`gatehouse did not execute the tool call: ${sample}`);
    return { name: 'gatehouse', baseline: false, url, urlForLoad, headers, stop: gatehouse.stop };
  } catch (error) {
    await gatehouse.stop();
    throw error;
  }
}

async function run(options: ScenarioOptions): Promise<ScenarioResult> {
  const series: Series[] = [];
  const profiles: Record<string, string> = {};
  const notes = [
    `Request: POST /v1/agents/runs/{runId}/tool-calls {tool: "${TOOL}", input: ${JSON.stringify(INPUT)}} with a sandbox key; allowed by agent-tools-v1 with gate auto, so every call executes the tool. Direct: POST ${TOOL_PATH} with the input, to the same node:http upstream.`,
    `Each Gatehouse load run opens its own agent run (maxToolCalls ${MAX_TOOL_CALLS}); a load run making more calls than that would get 409s, counted as errors.`,
    'Added latency = gatehouse minus direct at the same fixed rate (open loop, latency counted from when each request was due).',
  ];
  const measure = (target: LoadTarget, body: unknown) => measureTarget(target, { method: 'POST', body: JSON.stringify(body) }, options, { series, profiles }, 'agents');

  const upstream = await startNodeHttp(UPSTREAM_BODY);
  try {
    await measure({ name: 'direct-upstream', baseline: true, url: `${upstream.origin}${TOOL_PATH}`, headers: JSON_HEADERS, stop: async () => {} }, INPUT);
    options.progress('starting gatehouse (compiling the bundled policies)');
    await measure(await startGatehouse(options.workDir, upstream.origin), { tool: TOOL, input: INPUT });
  } finally {
    await upstream.close();
  }

  const added = addedLatency(series, 'gatehouse', 'direct-upstream', options.rates, 'toolCall.');
  if (added.note) notes.push(added.note);
  const metrics: Record<string, number> = {
    ...added.metrics,
    'toolCall.throughputRatio': throughputRatio(findSeries(series, 'gatehouse', null)!.throughput, findSeries(series, 'direct-upstream', null)!.throughput),
  };
  return { scenario: 'agents', description: scenario.description, series, metrics, notes, profiles };
}

export const scenario: Scenario = {
  name: 'agents',
  description:
    'Governed agents: a tool call through Gatehouse (auth, schema checks, agent-tools-v1, step committed, tool called, outcome committed) vs the tool’s upstream called directly: added latency at fixed rates and maximum throughput.',
  run,
};
