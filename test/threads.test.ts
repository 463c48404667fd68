import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { Agent, request } from 'undici';
import { Store } from '../core/store.ts';
import { SharedTable } from '../core/threads/shared-table.ts';
import { gatehouse } from './helpers/cli.ts';
import { call, issueKey, tempDir } from './helpers/gatehouse.ts';
import { BUNDLED_POLICIES } from './helpers/policies.ts';
import { startServe } from './helpers/serve-process.ts';
import { routesFile, send, settled, startUpstream } from './helpers/upstream.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';
import { wsUrl } from './helpers/stream-client.ts';

// `gatehouse serve --threads N`: the shared-memory table the threads share state in, then the
// whole server on two threads, driven over many connections so the kernel spreads them.

t.setTimeout(300_000);

t.test('the shared table finds, inserts and removes as a map does, whatever the collisions', async (t) => {
  // 64 slots: 40 live ids collide often, and removals shift probe runs back.
  const table = SharedTable.create(64, 1);
  const model = new Map<string, number>();
  let seed = 7;
  const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
  for (let step = 0; step < 20_000; step++) {
    const id = `id-${random(60)}`;
    table.locked(() => {
      if (random(3) === 0) {
        const slot = table.find(id);
        if (slot >= 0) table.remove(slot);
        model.delete(id);
      } else {
        const slot = table.insert(id);
        if (slot < 0) return t.ok(model.size * 4 >= 64 * 3, 'refused only when three quarters full');
        table.values[slot] = step;
        model.set(id, step);
      }
    });
  }
  table.locked(() => {
    const held = new Map<string, number>();
    for (let i = 0; i < 60; i++) {
      const slot = table.find(`id-${i}`);
      if (slot >= 0) held.set(`id-${i}`, table.values[slot]!);
    }
    t.same(held, model, 'every id holds its last value, and removed ones are gone');
    let visited = 0;
    table.sweep(() => (visited++, false));
    t.equal(visited, model.size, 'a sweep visits every entry once');
    table.sweep(() => true);
    t.equal(table.find('id-1'), -1, 'a sweep removes what it is told to');
  });
});

t.test('the shared table lock keeps updates from several threads whole', async (t) => {
  const table = SharedTable.create(16, 1);
  const rounds = 50_000;
  const worker = () => {
    const w = new Worker(new URL('./helpers/shared-table-worker.ts', import.meta.url), {
      workerData: { memory: table.memory, rounds },
      execArgv: [...process.execArgv, '--import', new URL('../scripts/register-typescript.js', import.meta.url).href],
    });
    return new Promise<void>((resolve, reject) => {
      w.once('message', () => resolve());
      w.once('error', reject);
    }).finally(() => w.terminate());
  };
  await Promise.all([worker(), worker()]);
  table.locked(() => t.equal(table.values[table.find('counter')], 2 * rounds, 'no increment lost'));
});

const ADMIN = 'threads-test-admin-key-0123456789abcdef';

/** `--threads 2` with signatures off, the sandbox limit `rate`, and webhooks allowed to reach 127.0.0.1. */
async function startThreads(t: Test, rate: string) {
  const dataDir = tempDir(t);
  const served = await startServe(['--threads', '2', '--data-dir', dataDir, '--signatures', 'off', '--rate-sandbox', rate, '--webhook-allow', '127.0.0.1'], { GATEHOUSE_ADMIN_KEY: ADMIN });
  t.teardown(() => served.child.kill('SIGKILL'));
  return { ...served, dataDir };
}

/** Sends `n` requests from each of `connections` connections of their own, all at once; resolves to every answer. */
async function fromConnections<T>(connections: number, n: number, send: (agent: Agent, c: number, i: number) => Promise<T>): Promise<T[]> {
  const agents = Array.from({ length: connections }, () => new Agent({ connections: 1 }));
  try {
    const answers = await Promise.all(agents.map(async (agent, c) => {
      const out: T[] = [];
      for (let i = 0; i < n; i++) out.push(await send(agent, c, i));
      return out;
    }));
    return answers.flat();
  } finally {
    await Promise.all(agents.map((agent) => agent.close()));
  }
}

function post(url: string, agent: Agent, key: string, body: unknown, headers: Record<string, string> = {}) {
  return request(`${url}/v1/decisions`, {
    method: 'POST',
    dispatcher: agent,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  }).then(async (r) => ({ status: r.statusCode, replayed: r.headers['idempotent-replayed'], text: await r.body.text() }));
}

function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : NaN;
}

t.test('two threads serve one port and one store: one audit chain, one memory numbering, every event streamed and delivered once', async (t) => {
  const served = await startThreads(t, '100000/100000');
  const writer = await issueKey(served.url, ADMIN, { env: 'sandbox', scopes: ['decisions:write', 'decisions:read', 'stream:subscribe', 'webhooks:manage', 'memory:read'] });
  const receiver = await startReceiver(t);
  t.equal((await call(served.url, 'POST', '/v1/webhooks/config', { key: writer.key, body: { url: receiver.url, events: ['decision.created'] } })).status, 201, 'a webhook endpoint is registered');

  // Subscribers on several connections: whichever thread each reached, it must see every thread's events.
  const subscribers = await Promise.all(Array.from({ length: 4 }, () => new Promise<{ ids: string[]; ws: WebSocket }>((resolve, reject) => {
    const ws = new WebSocket(wsUrl(served.url), { headers: { authorization: `Bearer ${writer.key}` } });
    const ids: string[] = [];
    ws.on('message', (data) => {
      const message = JSON.parse(String(data));
      if (message.type === 'subscribed') resolve({ ids, ws });
      if (message.type === 'event' && message.kind === 'decision.created') ids.push(message.data.id);
    });
    ws.once('open', () => ws.send(JSON.stringify({ type: 'subscribe', topics: ['decisions'] })));
    ws.once('error', reject);
  })));
  t.teardown(() => subscribers.forEach((s) => s.ws.terminate()));

  const answers = await fromConnections(8, 40, (agent, c, i) => post(served.url, agent, writer.key, { title: `threaded ${c}-${i}`, policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: i }] }));
  t.ok(answers.every((a) => a.status === 200), 'every decision is created');
  const ids = answers.map((a) => JSON.parse(a.text).id as string);
  t.equal(new Set(ids).size, 320, 'each once');

  const metrics = (await call(served.url, 'GET', '/metrics')).text;
  const perThread = [0, 1].map((i) => metric(metrics, `gatehouse_thread_requests{thread="${i}"}`));
  t.ok(perThread.every((n) => n > 0), `both threads answered requests (${perThread.join(' and ')})`);
  t.equal(metric(metrics, 'gatehouse_http_requests_total{method="POST",route="/v1/decisions",status="200"}'), 320, 'a scrape on either thread counts both');

  for (const subscriber of subscribers) {
    for (let waited = 0; subscriber.ids.length < 320 && waited < 200; waited++) await new Promise((r) => setTimeout(r, 50));
  }
  t.ok(subscribers.every((s) => s.ids.length === 320 && new Set(s.ids).size === 320), 'every subscriber got every decision once');
  await receiver.waitFor((r) => r.length >= 320);
  await new Promise((r) => setTimeout(r, 500));
  const delivered = receiver.received.map((r) => JSON.parse(r.body).data.id as string);
  t.equal(delivered.length, 320, 'each event delivered by one thread only');
  t.same(new Set(delivered), new Set(ids));

  // Memory lives on thread 0; the other threads hand it the routes that read memory, and it
  // records every thread's decisions before answering them: each connection reads every decision.
  const last = ids.at(-1)!;
  const found = await fromConnections(6, 1, async (agent) => {
    const r = await request(`${served.url}/v1/memory/query`, {
      method: 'POST',
      dispatcher: agent,
      headers: { authorization: `Bearer ${writer.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'threaded 7-39', namespaces: ['decisions'], topK: 3 }),
    });
    return ((await r.body.json()) as { results: Array<{ key: string }> }).results.some((x) => x.key === last);
  });
  t.ok(found.every(Boolean), 'the last decision is in memory on every connection, at once');
  const created = await fromConnections(4, 1, (agent, c) => post(served.url, agent, writer.key, { title: `read back ${c}`, policy: 'decision-gate-v1', context: [] }));
  const readBack = await fromConnections(4, 1, async (agent, c) => {
    const id = JSON.parse(created[(c + 1) % 4]!.text).id as string;
    const r = await request(`${served.url}/v1/memory/decisions:${id}`, { dispatcher: agent, headers: { authorization: `Bearer ${writer.key}` } });
    await r.body.text();
    return r.statusCode;
  });
  t.same(readBack, [200, 200, 200, 200], "a decision is in memory on another connection right after its reply");

  // Memory writes reach thread 0 from every connection, and are numbered there, in one order.
  const writes = await fromConnections(4, 5, (agent, c, i) =>
    request(`${served.url}/v1/memory`, {
      method: 'POST',
      dispatcher: agent,
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ namespace: 'notes', key: 'shared', text: `written by ${c}-${i}` }),
    }).then(async (r) => ({ status: r.statusCode, body: (await r.body.json()) as { id: string; version: number } })),
  );
  t.ok(writes.every((w) => w.status === 201), 'every memory write is stored');
  t.equal(new Set(writes.map((w) => w.body.id)).size, 1, 'one item for the key, whichever thread took the write');
  t.same(writes.map((w) => w.body.version).sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i + 1), 'versions 1 to 20, each once');
  // What thread 0 refuses of a handed request reaches the client as it would on one thread.
  const refused = await fromConnections(4, 2, (agent, _c, i) =>
    request(`${served.url}/v1/memory`, {
      method: 'POST',
      dispatcher: agent,
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: i === 0 ? 'x'.repeat(2 * 1024 * 1024) : '{"namespace":',
    }).then(async (r) => [r.statusCode, r.headers['content-type'], ((await r.body.json()) as { code: string }).code]),
  );
  t.same(refused.filter((_, i) => i % 2 === 0), Array(4).fill([413, 'application/problem+json', 'payload_too_large']), 'a body over the limit is 413');
  t.same(refused.filter((_, i) => i % 2 === 1), Array(4).fill([400, 'application/problem+json', 'invalid_request']), 'malformed JSON is 400');

  served.child.kill('SIGTERM');
  t.equal((await served.exited).code, 0, 'SIGTERM drains every thread and exits 0');
  const verified = await gatehouse(['audit', 'verify', '--data-dir', served.dataDir]);
  t.equal(verified.code, 0, 'the audit chain verifies');
  t.match(verified.stdout, /audit chain intact: \d+ entries/);
  const store = Store.open({ dataDir: served.dataDir });
  t.teardown(() => store.close());
  const revisions = [...store.database<{ revision: number; env: string }>('memory-items').getRange()].filter((e) => e.value.env === 'sandbox').map((e) => e.value.revision);
  t.equal(new Set(revisions).size, revisions.length, 'no memory revision was given twice');
  const decisionItems = [...store.database<{ namespace: string; key: string; version: number }>('memory-items').getRange()].map((e) => e.value).filter((v) => v.namespace === 'decisions');
  t.equal(new Set(decisionItems.map((v) => v.key)).size, 324, 'every decision is recorded in memory');
  t.equal(decisionItems.length, 324, 'once');
  t.equal(Math.max(...revisions), revisions.length, 'revisions are dense, in one order');
});

t.test('threads share Idempotency-Keys in flight and rate limits', async (t) => {
  const served = await startThreads(t, '50/100');
  const writer = await issueKey(served.url, ADMIN, { env: 'sandbox', scopes: ['decisions:write'] });

  const body = { title: 'once', policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 1 }] };
  const same = await fromConnections(8, 1, (agent) => post(served.url, agent, writer.key, body, { 'idempotency-key': 'threads-once' }));
  const created = same.filter((a) => a.status === 200);
  t.ok(created.length >= 1, 'one was created');
  t.equal(new Set(created.map((a) => JSON.parse(a.text).id)).size, 1, 'every 200 names the one decision');
  t.ok(created.filter((a) => a.replayed !== 'true').length === 1, 'the others replay it');
  t.ok(same.every((a) => a.status === 200 || a.status === 409), 'or are told it is in flight');

  const started = performance.now();
  const burst = await fromConnections(8, 40, (agent, c, i) => post(served.url, agent, writer.key, { ...body, title: `burst ${c}-${i}` }));
  const seconds = (performance.now() - started) / 1000;
  const allowed = burst.filter((a) => a.status === 200).length;
  t.ok(burst.every((a) => a.status === 200 || a.status === 429), 'refused with 429 beyond the limit');
  // One bucket for the key: 100 burst (less the request above) plus 50/s, not that on each thread.
  t.ok(allowed <= 100 + Math.ceil(50 * seconds) + 1, `${allowed} allowed in ${seconds.toFixed(2)} s: the limit holds across threads`);
  t.ok(allowed >= 90, `${allowed} allowed: the burst is available`);
  served.child.kill('SIGTERM');
  t.equal((await served.exited).code, 0, 'SIGTERM drains every thread and exits 0');
});

t.test('a request the gateway holds on thread 0 is sent by it when any thread executes its decision', async (t) => {
  const dir = tempDir(t);
  // The bundled data gates only requests that must also be signed; gate one that need not be.
  const policies = join(dir, 'rego');
  cpSync(BUNDLED_POLICIES, policies, { recursive: true });
  const data = JSON.parse(readFileSync(join(policies, 'data.json'), 'utf8'));
  data.route_access.gated.push({ methods: ['POST'], paths: ['/api/payments'] });
  writeFileSync(join(policies, 'data.json'), JSON.stringify(data));
  const upstream = await startUpstream(t);
  const routes = routesFile(dir, [{ name: 'payments', match: { pathPrefix: '/api' }, upstream: upstream.url, policy: 'route-access-v1', auth: 'api-key' }]);
  const served = await startServe(
    ['--threads', '2', '--data-dir', join(dir, 'data'), '--policies-dir', policies, '--signatures', 'off', '--proxy-routes', routes, '--proxy-port', '0'],
    { GATEHOUSE_ADMIN_KEY: ADMIN },
  );
  t.teardown(() => served.child.kill('SIGKILL'));
  const gateway = served.logs().find((entry) => entry.msg === 'proxy gateway listening')?.url as string;
  const scopes = ['decisions:read', 'decisions:approve', 'decisions:execute', 'decisions:write'];
  const requester = await issueKey(served.url, ADMIN, { env: 'sandbox', scopes, roles: ['developer'], name: 'requester' });
  const approver = await issueKey(served.url, ADMIN, { env: 'sandbox', scopes, roles: ['developer'], name: 'approver' });

  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    const held = await send(gateway, 'POST', '/api/payments', { headers: { authorization: `Bearer ${requester.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ amount: i }) });
    t.equal(held.status, 202, 'the gateway holds the request');
    ids.push(held.json.id);
  }
  const before = metric((await call(served.url, 'GET', '/metrics')).text, 'gatehouse_thread_requests{thread="1"}');
  // Each action on a connection of its own: the kernel spreads them over both threads.
  const act = (action: string) =>
    fromConnections(6, 1, (agent, c) =>
      request(`${served.url}/v1/decisions/${ids[c]}/${action}`, { method: 'POST', dispatcher: agent, headers: { authorization: `Bearer ${approver.key}` } }).then(async (r) => {
        await r.body.text();
        return r.statusCode;
      }),
    );
  t.same(await act('approve'), Array(6).fill(200), 'every approval succeeds');
  t.same(await act('execute'), Array(6).fill(200), 'every execution succeeds');
  const after = metric((await call(served.url, 'GET', '/metrics')).text, 'gatehouse_thread_requests{thread="1"}');
  t.ok(after > before, `thread 1 took some of the actions (${after - before})`);
  const states: string[] = [];
  for (const id of ids) states.push((await settled(() => call(served.url, 'GET', `/v1/decisions/${id}/result`, { key: approver.key }))).json.state);
  t.same(states, Array(6).fill('complete'), 'every held request is sent, and its response kept');
  t.equal(upstream.received.length, 6, 'each held request sent exactly once');
  served.child.kill('SIGTERM');
  t.equal((await served.exited).code, 0, 'SIGTERM drains every thread and exits 0');
});

t.test('three threads: thread 0 records what both workers log, once each', async (t) => {
  const dataDir = tempDir(t);
  const served = await startServe(['--threads', '3', '--data-dir', dataDir, '--signatures', 'off', '--rate-sandbox', '100000/100000'], { GATEHOUSE_ADMIN_KEY: ADMIN });
  t.teardown(() => served.child.kill('SIGKILL'));
  const writer = await issueKey(served.url, ADMIN, { env: 'sandbox', scopes: ['decisions:write', 'memory:read'] });
  const answers = await fromConnections(12, 10, (agent, c, i) => post(served.url, agent, writer.key, { title: `three ${c}-${i}`, policy: 'decision-gate-v1', context: [] }));
  t.ok(answers.every((a) => a.status === 200), 'every decision is created');
  const metrics = (await call(served.url, 'GET', '/metrics')).text;
  t.equal(metric(metrics, 'gatehouse_http_requests_total{method="POST",route="/v1/decisions",status="200"}'), 120, 'a scrape counts every thread');
  t.ok([0, 1, 2].every((i) => !Number.isNaN(metric(metrics, `gatehouse_thread_requests{thread="${i}"}`))), 'each of the three reports');
  const listed = await call(served.url, 'GET', '/v1/memory?namespace=decisions&limit=200', { key: writer.key });
  t.equal(listed.json.data.length, 120, 'memory lists every decision, whichever thread stored it');
  served.child.kill('SIGTERM');
  t.equal((await served.exited).code, 0, 'SIGTERM drains every thread and exits 0');
  const verified = await gatehouse(['audit', 'verify', '--data-dir', dataDir]);
  t.equal(verified.code, 0, 'the audit chain verifies');
  const store = Store.open({ dataDir });
  t.teardown(() => store.close());
  const recorded = [...store.database<{ namespace: string; key: string }>('memory-items').getRange()].map((e) => e.value).filter((v) => v.namespace === 'decisions');
  t.equal(recorded.length, 120, 'each recorded once');
});
