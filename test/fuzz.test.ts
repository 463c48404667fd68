import { statSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import t from 'tap';
import { Pool } from 'undici';
import { SCOPES } from '../core/scopes.ts';
import { signRequest } from '../core/signatures/signer.ts';
import type { RouteDef } from '../proxy/route.ts';
import { ID_MAX_LENGTH } from '../proxy/id-schema.ts';
import { paramNames, ROUTES } from '../proxy/route-table.ts';
import {
  heavyStrings,
  hostileAuthorization,
  hostileContentType,
  hostileHeaders,
  hostileQuery,
  hostileSegment,
  hostileValue,
  mutateBody,
  Rng,
  setAt,
  stringPlaces,
} from './helpers/fuzz.ts';
import { call, issueKey, newSigningKey, startTestServer } from './helpers/gatehouse.ts';
import { activeReaders, settledReaders } from './helpers/lmdb-readers.ts';
import { bundledEngine } from './helpers/policies.ts';
import { startUpstream } from './helpers/upstream.ts';

// Every route's path, query, headers and body, fuzzed from one seed (FUZZ_SEED replays a run):
// no answer is a 5xx, every refusal is a problem document whose `status` is the HTTP status,
// and afterwards the server answers, holds no leaked LMDB reader and has not bloated its file.

const SEED = Number(process.env.FUZZ_SEED ?? 20_2026);
const PER_ROUTE = Number(process.env.FUZZ_PER_ROUTE ?? 40);
/** Replays only these request numbers of the seed's run (the numbers failures are reported with). */
const ONLY = process.env.FUZZ_ONLY?.split(',').map(Number);
/** The suite stops sending here whatever is left, so a slow machine cannot make it hang. */
const BUDGET_MS = 90_000;
const CONCURRENCY = 4;
/**
 * A run grows the file about 1.5 KiB a request (audit entries, events, what the valid requests
 * store). Read transactions left open pin the pages writes would reuse, and the file grows many
 * times faster (1.2 GB for 52 MB of data when the issue was found).
 */
const GROWTH_PER_REQUEST = 8 * 1024;

/** The schema's own idea of a value (defaults, minimal strings), or `{}` where it has none (patterned strings). */
function seedOf(schema: TSchema): any {
  try {
    return Value.Create(schema);
  } catch {
    return {};
  }
}

t.setTimeout(240_000);
t.comment(`FUZZ_SEED=${SEED}`);

const engine = await bundledEngine();

t.test('fuzzing every route', async (t) => {
  const upstream = await startUpstream(t);
  const unlimited = { ratePerSecond: 1e9, burst: 1e9 };
  const { url, admin, adminSigner, server, dataDir } = await startTestServer(t, {
    policies: engine,
    rateLimits: { sandbox: unlimited, production: unlimited },
    toolAllow: ['127.0.0.1'],
    webhooks: { allow: ['127.0.0.1'] },
  });
  const { store } = server.services;

  // Records for the id-taking routes to find, made by a sandbox admin that needs no signature.
  const fuzzer = await issueKey(url, admin, { env: 'sandbox', scopes: [...SCOPES], name: 'fuzzer' });
  const spare = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'], name: 'spare' });
  const as = (method: string, path: string, body?: unknown) => call(url, method, path, { key: fuzzer.key, ...(body === undefined ? {} : { body }) });
  const made = async (method: string, path: string, body: unknown) => {
    const answer = await as(method, path, body);
    t.ok(answer.status < 300, `setup: ${method} ${path} → ${answer.status} ${answer.status < 300 ? '' : answer.text}`);
    return answer.json;
  };
  const spareKid = (await made('POST', `/v1/keys/${spare.id}/signing-keys`, { jwk: newSigningKey('spare-kid').jwk })).kid;
  const decision = await made('POST', '/v1/decisions', { title: 'Seed', policy: 'decision-gate-v1', context: 'fuzz' });
  const memory = await made('POST', '/v1/memory', { namespace: 'notes', key: 'seed', text: 'seed evidence about budgets' });
  const objective = await made('POST', '/v1/objectives', { title: 'Grow revenue' });
  const webhook = await made('POST', '/v1/webhooks/config', { url: `${upstream.url}/hook`, events: ['decision.*'] });
  const tool = {
    name: 'pay',
    description: 'pays',
    inputSchema: { type: 'object', properties: { amount: { type: 'number' }, to: { type: 'string' } } },
    upstream: { method: 'POST', url: `${upstream.url}/pay` },
    scopes: ['payments:write'],
    policy: 'agent-tools-v1',
    spendField: 'amount',
  };
  await made('POST', '/v1/agents/tools', tool);
  const agent = await made('POST', '/v1/agents', { name: 'bot', scopes: ['payments:write'], tools: ['pay'] });
  const run = await made('POST', '/v1/agents/runs', { agentId: agent.id });

  /** The real value of each path parameter: the one a fuzzed segment starts from. */
  const params = (route: RouteDef): Record<string, string> => {
    const id = route.path.startsWith('/v1/decisions/')
      ? decision.id
      : route.path.startsWith('/v1/keys/')
        ? spare.id
        : route.path.startsWith('/v1/memory/')
          ? memory.id
          : route.path.startsWith('/v1/objectives/')
            ? objective.id
            : route.path.startsWith('/v1/webhooks/')
              ? webhook.id
              : agent.id;
    return { id, kid: spareKid, runId: run.id, deliveryId: 'dlv_0' };
  };

  /** A valid body for routes that take one: what mutations start from (`seedOf` for the others). */
  const bodies: Record<string, unknown> = {
    'POST /v1/decisions': { title: 'Fuzz', policy: 'decision-gate-v1', context: [{ source: 'finance:amount', value: 5 }], inputs: ['notes:seed'], objectives: ['Grow revenue'] },
    'POST /v1/decisions/{id}/approve': { comment: 'ok' },
    'POST /v1/decisions/{id}/reject': { comment: 'no' },
    'POST /v1/decisions/{id}/execute': { comment: 'go' },
    'POST /v1/decisions/{id}/cancel': { comment: 'stop' },
    'POST /v1/keys': { env: 'sandbox', scopes: ['decisions:read'], name: 'k', roles: ['approver'] },
    'POST /v1/keys/{id}/signing-keys': { jwk: newSigningKey('fuzz-kid').jwk },
    'POST /v1/memory': { namespace: 'notes', key: 'k1', text: 'hello', attributes: { a: 1, nested: { b: [1, 2] } }, links: [{ to: memory.id, relation: 'uses' }] },
    'POST /v1/memory/query': { query: 'budget', namespaces: ['notes'], topK: 5, filters: { attributes: { a: 1 } }, graph: { expand: 1 } },
    'POST /v1/context/synthesis': { subject: { decisionId: decision.id }, role: 'executive', layers: ['executive'], budget: 500 },
    'POST /v1/objectives': { title: 'Objective', description: 'why', key: 'objective-1' },
    'POST /v1/objectives/{id}/decisions': { decisionId: decision.id },
    'POST /v1/webhooks/config': { url: `${upstream.url}/other`, events: ['decision.*'], description: 'd' },
    'PATCH /v1/webhooks/config/{id}': { events: ['*'], enabled: true },
    'POST /v1/webhooks/config/{id}/rotate-secret': { graceSeconds: 60 },
    'POST /v1/agents/tools': { ...tool, name: 'refund' },
    'POST /v1/agents': { name: 'bot2', scopes: ['payments:write'], tools: ['pay'] },
    'POST /v1/agents/runs': { agentId: agent.id, limits: { maxToolCalls: 5 } },
    'POST /v1/agents/runs/{runId}/tool-calls': { tool: 'pay', input: { amount: 1, to: 'acme' } },
    'POST /v1/agents/runs/{runId}/replay': { policy: 'agent-tools-v1', limit: 10 },
  };
  /** A valid query for routes that take one. */
  const queries: Record<string, Record<string, string>> = {
    'GET /v1/decisions': { status: 'created', policy: 'decision-gate-v1', limit: '5' },
    'GET /v1/keys': { env: 'sandbox' },
    'GET /v1/impact/trace': { decision: decision.id, limit: '5' },
    'GET /v1/memory/{id}': { version: '1' },
    'GET /v1/webhooks/config/{id}/deliveries': { limit: '5' },
    'GET /v1/agents/runs/{runId}': { after: '0', limit: '10' },
  };
  const name = (route: RouteDef) => `${route.method} ${route.path}`;
  // A route added without a seed above is still fuzzed, from the value its schema makes.
  for (const route of ROUTES) {
    if (route.body && !(name(route) in bodies)) bodies[name(route)] = seedOf(route.body);
    if (route.query && !(name(route) in queries)) queries[name(route)] = Object.fromEntries(Object.entries(seedOf(route.query) ?? {}).map(([k, v]) => [k, String(v)]));
  }

  const pool = new Pool(url, { connections: CONCURRENCY });
  t.teardown(() => pool.destroy());

  const idleReaders = activeReaders(store);
  const sizeBefore = statSync(join(dataDir, 'gatehouse.mdb')).size;
  const statuses = new Map<number, number>();
  let sent = 0;
  /** Requests undici would not send (header values it rejects): built but never on the wire. */
  let refusedByClient = 0;

  interface FuzzRequest {
    method: string;
    path: string;
    headers: Record<string, string>;
    body: string | undefined;
  }

  /** Sends `request` and lists what is wrong with the answer: a 5xx, or a refusal that is not a problem document with its HTTP status. */
  async function send(label: string, request: FuzzRequest, failures: string[]): Promise<void> {
    let status: number;
    let contentType: string | undefined;
    let text: string;
    try {
      const answer = await pool.request({ ...request, headersTimeout: 15_000, bodyTimeout: 15_000 });
      text = await answer.body.text();
      status = answer.statusCode;
      contentType = answer.headers['content-type'] as string | undefined;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === 'UND_ERR_INVALID_ARG') refusedByClient++;
      else failures.push(`${label} → no answer: ${code ?? ''} ${(error as Error).message}`);
      return;
    }
    sent++;
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    judge(label, status, contentType, text, failures);
  }

  function judge(label: string, status: number, contentType: string | undefined, text: string, failures: string[]): void {
    if (status >= 500) failures.push(`${label} → ${status} ${text.slice(0, 300)}`);
    if (status < 400) return;
    let problem: { status?: unknown; code?: unknown } | undefined;
    try {
      problem = JSON.parse(text);
    } catch {
      problem = undefined;
    }
    if (!contentType?.startsWith('application/problem+json') || problem?.status !== status || typeof problem.code !== 'string') {
      failures.push(`${label} → ${status} is not a problem document with status ${status}: ${contentType} ${text.slice(0, 300)}`);
    }
  }

  await t.test('every string a route takes, at its length bound in characters of three and four bytes', async (t) => {
    const failures: string[] = [];
    const authorization = `Bearer ${fuzzer.key}`;
    for (const route of ROUTES) {
      const real = params(route);
      const path = route.path.replace(/\{(\w+)\}/g, (_, param: string) => real[param]!);
      const requests: FuzzRequest[] = [];
      // Each path parameter in turn, at PathParam's bound.
      for (const param of paramNames(route.path)) {
        for (const heavy of heavyStrings(ID_MAX_LENGTH)) {
          const heavyPath = route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(name === param ? heavy : real[name]!));
          requests.push({ method: route.method, path: heavyPath, headers: { authorization }, body: undefined });
        }
      }
      const seedQuery = queries[name(route)];
      for (const place of route.query ? stringPlaces(route.query) : []) {
        for (const heavy of heavyStrings(place.maxLength)) {
          const query = new URLSearchParams({ ...seedQuery, [String(place.path[0])]: heavy });
          requests.push({ method: route.method, path: `${path}?${query}`, headers: { authorization }, body: undefined });
        }
      }
      for (const place of route.body ? stringPlaces(route.body) : []) {
        for (const heavy of heavyStrings(place.maxLength)) {
          const body = place.recordKey ? setAt(bodies[name(route)], place.path, { [heavy]: 1 }) : setAt(bodies[name(route)], place.path, heavy);
          requests.push({ method: route.method, path, headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify(body) });
        }
      }
      for (const request of requests) await send(`${request.method} ${request.path.slice(0, 120)} ${request.body?.slice(0, 200) ?? ''}`, request, failures);
    }
    t.same(failures.slice(0, 20), [], `no 5xx, every refusal a problem document (${failures.length} failures)`);
  });

  await t.test('seeded random requests to every route', async (t) => {
    const failures: string[] = [];

    /** Request `index` of the run, the same for a seed whatever order the requests go out in. */
    const build = (index: number): FuzzRequest => {
      const rng = new Rng(SEED * 7919 + index);
      const route = ROUTES[index % ROUTES.length]!;
      const real = params(route);
      let path = route.path.replace(/\{(\w+)\}/g, (_, param: string) => hostileSegment(rng, real[param]!));
      if (rng.chance(0.05)) path = rng.pick([`${path}/`, `${path}//x`, path.replace('/v1/', '//v1/'), path.toUpperCase(), `${path};a=b`]);
      const query = route.query ? hostileQuery(rng, queries[name(route)]!) : rng.chance(0.1) ? hostileQuery(rng, {}) : '';
      if (query) path += `?${query}`;
      const method = rng.chance(0.05) ? rng.pick(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) : route.method;
      let body: string | undefined;
      if (route.body && rng.chance(0.9)) body = mutateBody(rng, bodies[name(route)]);
      else if (rng.chance(0.05)) body = JSON.stringify(hostileValue(rng));
      const headers: Record<string, string> = hostileHeaders(rng);
      const contentType = body === undefined ? undefined : hostileContentType(rng);
      if (contentType !== undefined) headers['content-type'] = contentType;
      const who = rng.next();
      if (who < 0.55) headers.authorization = `Bearer ${fuzzer.key}`;
      else if (who < 0.75) headers.authorization = `Bearer ${admin}`;
      else {
        const authorization = hostileAuthorization(rng);
        if (authorization !== undefined) headers.authorization = authorization;
      }
      if (who >= 0.55 && who < 0.72) Object.assign(headers, signRequest({ method, url: url + path, headers, body: body ?? null }, adminSigner));
      return { method, path, headers, body };
    };

    const plan = ONLY ?? Array.from({ length: PER_ROUTE * ROUTES.length }, (_, i) => i);
    const deadline = Date.now() + BUDGET_MS;
    let next = 0;
    const worker = async () => {
      while (next < plan.length && Date.now() < deadline) {
        const index = plan[next++]!;
        const request = build(index);
        if (ONLY) t.comment(`#${index}`, { ...request, path: request.path.slice(0, 1000), body: request.body?.slice(0, 1000) });
        await send(`#${index} ${request.method} ${request.path.slice(0, 160)}`, request, failures);
      }
    };
    const before = sent;
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    t.comment(`sent ${sent - before} of ${plan.length} (undici refused ${refusedByClient}); statuses ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}`);
    t.ok(sent - before >= Math.min(plan.length, 500) && refusedByClient <= plan.length / 20, 'the fuzzer got its requests out');
    t.same(failures.slice(0, 20), [], `no 5xx, every refusal a problem document (${failures.length} failures)`);
  });

  await t.test('bodies that disagree with their Content-Length', async (t) => {
    // Sent on a raw socket: HTTP clients will not send them. A body shorter than declared is cut
    // off by the client (nothing to answer); a longer one is answered for its declared length.
    const exchange = (head: string, body: string, wait: number) =>
      new Promise<string>((resolve) => {
        const socket = connect(server.port, '127.0.0.1');
        const chunks: Buffer[] = [];
        socket.on('data', (chunk) => chunks.push(chunk));
        socket.on('error', () => resolve(Buffer.concat(chunks).toString('utf8')));
        socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
        // Idle for `wait`: the answer is complete (the server closes the connection it asked to) or not coming.
        socket.setTimeout(wait, () => socket.destroy());
        socket.write(`${head}\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer ${fuzzer.key}\r\nContent-Type: application/json\r\n\r\n${body}`);
      });
    await exchange('POST /v1/memory HTTP/1.1\r\nContent-Length: 200', '{"namespace":"notes","text":"short"}', 200);
    const failures: string[] = [];
    for (const [head, body] of [
      ['POST /v1/memory HTTP/1.1\r\nContent-Length: 5', '{"namespace":"notes","text":"longer than declared"}'],
      ['POST /v1/decisions HTTP/1.1\r\nContent-Length: 2000000', '{}'],
      ['POST /v1/decisions/%ff/approve HTTP/1.1\r\nContent-Length: 2', '{}'],
    ] as const) {
      const answer = await exchange(head, body, 2000);
      const parsed = /^HTTP\/1\.1 (\d{3})[^\r]*\r\n([\s\S]*?)\r\n\r\n([\s\S]*)$/.exec(answer);
      t.ok(parsed, `${head.split('\r\n')[0]} is answered`);
      if (!parsed) continue;
      const length = Number(/content-length: (\d+)/i.exec(parsed[2]!)?.[1] ?? parsed[3]!.length);
      judge(head.split('\r\n')[0]!, Number(parsed[1]), /content-type: ([^\r]+)/i.exec(parsed[2]!)?.[1], parsed[3]!.slice(0, length), failures);
    }
    t.same(failures, [], 'no 5xx, every refusal a problem document');
  });

  await t.test('afterwards', async (t) => {
    t.equal((await call(url, 'GET', '/healthz')).status, 200, 'the server is alive');
    t.equal(await settledReaders(store, idleReaders), idleReaders, 'no LMDB read transaction is left open');
    const growth = statSync(join(dataDir, 'gatehouse.mdb')).size - sizeBefore;
    t.ok(growth <= sent * GROWTH_PER_REQUEST, `the data file grew ${Math.round(growth / 1024)} KiB for ${sent} requests (at most ${GROWTH_PER_REQUEST / 1024} KiB each)`);
  });
});
