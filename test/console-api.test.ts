import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { call, issueKey, startTestServer, tempDir } from './helpers/gatehouse.ts';
import { BUNDLED_POLICIES, bundledEngine } from './helpers/policies.ts';
import { routePolicies, routesFile, send, startUpstream } from './helpers/upstream.ts';

// What the console reads, against a real server: decisions newest first, filtered by next action
// and title and counted; the loaded policies; the audit chain's status; what a held request
// would send; and the console's page with its Content-Security-Policy.

t.setTimeout(300_000);

const SCOPES = ['decisions:read', 'decisions:write', 'decisions:approve', 'decisions:execute', 'impact:read'];

t.test('decisions newest first, filtered by nextAction and title, paged both ways and counted', async (t) => {
  const engine = await bundledEngine();
  const { url, admin } = await startTestServer(t, { policies: engine });
  const writer = await issueKey(url, admin, { env: 'sandbox', scopes: SCOPES });
  const other = await issueKey(url, admin, { env: 'sandbox', scopes: SCOPES });
  const ids: string[] = [];
  for (const [title, score] of [['Deploy web', 82], ['Deploy API', 10], ['Rotate secrets', 90], ['deploy DOCS', 75], ['Scale db', 5]] as const) {
    const created = await call(url, 'POST', '/v1/decisions', { key: writer.key, body: { title, policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: score }] } });
    t.equal(created.status, 200, created.text);
    ids.push(created.json.id);
  }
  t.equal((await call(url, 'POST', `/v1/decisions/${ids[2]}/approve`, { key: other.key })).status, 200, 'one gated decision approved');
  const list = async (query: string) => (await call(url, 'GET', `/v1/decisions?${query}`, { key: writer.key })).json;

  t.same((await list('order=desc')).data.map((d: { id: string }) => d.id), [...ids].reverse(), 'order=desc: newest first');
  t.same((await list('')).data.map((d: { id: string }) => d.id), ids, 'oldest first by default');
  t.same((await list('nextAction=approve&order=desc')).data.map((d: { id: string }) => d.id), [ids[3], ids[0]], 'nextAction filters');
  t.same((await list('q=DEPLOY')).data.map((d: { title: string }) => d.title), ['Deploy web', 'Deploy API', 'deploy DOCS'], 'q: a case-insensitive substring of the title');
  t.same((await list('q=deploy&gate=auto')).data.map((d: { title: string }) => d.title), ['Deploy API'], 'q combines with the other filters');

  const pages: string[][] = [];
  let cursor: string | null = null;
  do {
    const page: { data: Array<{ id: string }>; nextCursor: string | null } = await list(`order=desc&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
    pages.push(page.data.map((d) => d.id));
    cursor = page.nextCursor;
  } while (cursor);
  t.same(pages, [[ids[4], ids[3]], [ids[2], ids[1]], [ids[0]]], 'newest-first pages follow each other with nothing skipped or repeated');
  const ascending = await list('limit=2');
  const mixed = await call(url, 'GET', `/v1/decisions?order=desc&cursor=${ascending.nextCursor}`, { key: writer.key });
  t.equal(mixed.status, 400, 'a cursor is for the order it was given in');
  t.same((await list(`limit=2&cursor=${ascending.nextCursor}`)).data.map((d: { id: string }) => d.id), [ids[2], ids[3]], 'oldest-first paging unchanged');

  const counts = await call(url, 'GET', '/v1/decisions/counts', { key: writer.key });
  t.equal(counts.status, 200);
  t.same(counts.json, {
    total: 5,
    status: { created: 4, approved: 1 },
    gate: { human_approval: 3, auto: 2 },
    nextAction: { approve: 2, execute: 3 },
    policy: { 'decision-gate-v1': 5 },
  });
  const filtered = await call(url, 'GET', '/v1/decisions/counts?nextAction=approve&q=deploy', { key: writer.key });
  t.same(
    filtered.json,
    { total: 2, status: { created: 2 }, gate: { human_approval: 2 }, nextAction: { approve: 2, execute: 1 }, policy: { 'decision-gate-v1': 2 } },
    'each facet is counted with the other filters kept: what choosing its value would list',
  );
  t.equal((await call(url, 'GET', '/v1/decisions/counts?limit=2', { key: writer.key })).status, 400, 'counts take no paging');
  t.equal((await call(url, 'GET', `/v1/decisions/${ids[0]}`, { key: writer.key })).json.id, ids[0], 'decision ids still route to the decision');
});

t.test('the loaded policies, and the audit chain verified on demand', async (t) => {
  const engine = await bundledEngine();
  const { url, admin } = await startTestServer(t, { policies: engine });
  const reviewer = await issueKey(url, admin, { env: 'sandbox', scopes: SCOPES });
  const policies = await call(url, 'GET', '/v1/policies', { key: reviewer.key });
  t.equal(policies.status, 200);
  const spend = policies.json.data.find((p: { name: string }) => p.name === 'spend-approval-v1');
  t.match(spend, { family: 'spend-approval', version: 1, moduleHash: engine.info('spend-approval-v1').moduleHash, origin: 'rego' });
  t.ok(spend.sources.includes('spend-approval-v1.rego'), 'with the Rego sources it was built from');
  t.same(policies.json.data.map((p: { name: string }) => p.name), engine.names(), 'every loaded policy');
  const detail = await call(url, 'GET', '/v1/policies/spend-approval-v1', { key: reviewer.key });
  t.equal(detail.status, 200, detail.status === 200 ? 'GET /v1/policies/{name}' : detail.text);
  t.match(detail.json, spend, 'one policy, as listed');
  t.same(
    detail.json.modules.map((m: { path: string }) => m.path),
    spend.sources,
    'with the text of every module it was compiled from',
  );
  const own = detail.json.modules.find((m: { path: string }) => m.path === 'spend-approval-v1.rego');
  t.equal(own.text, readFileSync(join(BUNDLED_POLICIES, 'spend-approval-v1.rego'), 'utf8'), 'the Rego as written');
  const missing = await call(url, 'GET', '/v1/policies/no-such-v1', { key: reviewer.key });
  t.match([missing.status, missing.json], [404, { code: 'not_found', detail: /no-such-v1/ }], 'an unknown policy is a problem+json 404');
  t.equal((await call(url, 'GET', '/v1/policies/spend-approval-v1')).status, 401, 'reading it takes a key');

  t.equal((await call(url, 'GET', '/v1/audit/status', { key: reviewer.key })).status, 403, 'verifying the chain is an admin call');
  const status = await call(url, 'GET', '/v1/audit/status', { key: admin });
  t.equal(status.status, 200, status.text);
  t.match(status.json, { ok: true, broken: null, lastVerified: { seq: Number, hash: /^[0-9a-f]{64}$/ } });
  t.equal(status.json.lastVerified.seq, status.json.entries, 'the chain holds up to its last entry');
  t.ok(status.json.entries > 3, 'every call so far is in it');
});

t.test('a held proxied request: what executing its decision sends, and who asked', async (t) => {
  const engine = await routePolicies(t, { gated: [{ methods: ['POST'], paths: ['/api/payments'] }] });
  t.teardown(() => engine.close());
  const upstream = await startUpstream(t);
  const file = routesFile(tempDir(t), [{ name: 'payments', match: { pathPrefix: '/api' }, upstream: upstream.url, policy: 'route-access-v1', auth: 'api-key' }]);
  const { url, admin, server } = await startTestServer(t, { policies: engine, proxy: { routesFile: file, port: 0 } });
  const requester = await issueKey(url, admin, { env: 'sandbox', scopes: SCOPES, roles: ['developer'] });
  const body = JSON.stringify({ amount: 4200, to: 'acme', note: 'x'.repeat(5000) });
  const held = await send(server.gateway!.url, 'POST', '/api/payments?dryRun=false', {
    headers: { authorization: `Bearer ${requester.key}`, 'content-type': 'application/json' },
    body,
  });
  t.equal(held.status, 202, held.body.toString());
  const view = await call(url, 'GET', `/v1/decisions/${held.json.id}/held`, { key: requester.key });
  t.equal(view.status, 200, view.text);
  t.match(view.json, {
    decisionId: held.json.id,
    kind: 'proxy-request',
    state: 'held',
    requestedBy: requester.id,
    via: { route: 'payments' },
    request: { method: 'POST', target: '/api/payments?dryRun=false', upstream: upstream.url, bodyBytes: Buffer.byteLength(body), truncated: true },
  });
  t.equal(view.json.request.body, body.slice(0, 4096), 'the body, cut at 4 KiB');

  const plain = await call(url, 'POST', '/v1/decisions', { key: requester.key, body: { title: 'Plain', policy: 'decision-gate-v1', context: 'no risk' } });
  t.equal((await call(url, 'GET', `/v1/decisions/${plain.json.id}/held`, { key: requester.key })).status, 404, 'a plain decision holds nothing');
});

t.test('the console page: served without a key, under a strict Content-Security-Policy', async (t) => {
  const { url } = await startTestServer(t);
  const page = await fetch(`${url}/console`);
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /^text\/html/);
  const csp = page.headers.get('content-security-policy') ?? '';
  for (const directive of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "object-src 'none'", "frame-ancestors 'none'", "base-uri 'none'"]) {
    t.ok(csp.split('; ').includes(directive), directive);
  }
  t.match(csp, new RegExp(`connect-src 'self' ws://${new URL(url).host} wss://${new URL(url).host}`), 'the stream may be reached');
  t.notMatch(csp, /unsafe-inline|unsafe-eval/, 'no inline script or eval');
  t.equal(page.headers.get('x-content-type-options'), 'nosniff');
  const html = await page.text();
  t.notMatch(html, /<script>|<script [^>]*>[^<]/, 'the page has no inline script');

  const preact = await fetch(`${url}/console/preact.mjs`);
  t.equal(preact.status, 200, 'Preact is served from node_modules');
  t.match(preact.headers.get('content-type'), /^text\/javascript/);
  await preact.arrayBuffer();
  t.equal((await fetch(`${url}/console/..%2Fpackage.json`)).status, 404, 'nothing outside the console is reachable');
  t.equal((await fetch(`${url}/console/server.ts`)).status, 404);
  const root = await fetch(`${url}/`, { redirect: 'manual' });
  t.equal(root.status, 302, 'the server root leads to the console');
  t.equal(root.headers.get('location'), '/console');
  const hostile = await fetch(`${url}/console`, { headers: { host: "x; script-src 'unsafe-inline'" } });
  t.notMatch(hostile.headers.get('content-security-policy') ?? '', /unsafe-inline/, 'a forged Host cannot widen the policy');
});
