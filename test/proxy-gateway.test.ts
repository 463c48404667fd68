import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { WebSocket } from 'ws';
import { signRequest } from '../core/signatures/signer.ts';
import { enrollSigner, issueKey, startTestServer, tempDir } from './helpers/gatehouse.ts';
import { echoWebSockets, proxyEntries, OPEN_ACCESS, routePolicies, routesFile, send, startUpstream, type Upstream } from './helpers/upstream.ts';

// The proxy gateway in front of real upstream servers, under the bundled route-access-v1 policy:
// allowed requests are forwarded with clean headers, denied ones refused with the policy's
// reasons, WebSocket upgrades judged the same way, and every request audited.

t.setTimeout(600_000);
/** Allows a request only when the query it was given reads as expected: none at all, or `?tag=a&page=2&tag=b`. */
const QUERY_PROBE = {
  'query-probe-v1.rego': `package gatehouse.query_probe.v1

default allow := false

allow if count(input.query) == 0

allow if {
	input.query.tag == ["a", "b"]
	input.query.page == "2"
}

gate := "auto"
`,
};
const engine = await routePolicies(t, {}, { ...OPEN_ACCESS, ...QUERY_PROBE });
t.teardown(() => engine.close());

async function setup(t: Test, upstream: Upstream, route: Record<string, unknown> = {}) {
  const dir = tempDir(t);
  const file = routesFile(dir, [{ name: 'orders', match: { pathPrefix: '/api' }, upstream: upstream.url, policy: 'route-access-v1', auth: 'api-key', ...route }]);
  const { url, admin, server } = await startTestServer(t, { policies: engine, proxy: { routesFile: file, port: 0 } });
  const viewer = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'], roles: ['viewer'] });
  const auditor = await issueKey(url, admin, { env: 'sandbox', scopes: ['admin'] });
  return { url, admin, server, gateway: server.gateway!.url, viewer, auditor, dir };
}


t.test('an allowed request reaches the upstream and its answer comes back', async (t) => {
  const upstream = await startUpstream(t);
  const { gateway, viewer, server } = await setup(t, upstream);
  const answer = await send(gateway, 'GET', '/api/orders/42?expand=items', { headers: { authorization: `Bearer ${viewer.key}` } });
  t.equal(answer.status, 200);
  t.same(answer.json, { method: 'GET', url: '/api/orders/42?expand=items' }, 'path and query unchanged');
  t.equal(answer.headers['x-upstream'], 'yes', 'upstream headers come back');
  t.equal(upstream.received.length, 1);

  const [entry] = await proxyEntries(server, 1);
  t.match(entry, {
    keyId: viewer.id,
    env: 'sandbox',
    method: 'GET',
    route: 'proxy:orders',
    path: '/api/orders/42',
    status: 200,
    policy: 'route-access-v1',
    result: { allow: true, gate: 'auto' },
    traceparent: /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/,
    proxy: { route: 'orders', outcome: 'forwarded', upstreamStatus: 200, upstreamLatencyMs: Number },
  });
  t.ok(server.services.audit.verify().ok, 'the chain holds');
  const metrics = await server.services.metrics.registry.metrics();
  t.match(metrics, /gatehouse_proxy_requests_total\{route="orders",method="GET",outcome="forwarded",status="200"\} 1/);
  t.match(metrics, /gatehouse_proxy_upstream_duration_seconds_count\{route="orders",status="200"\} 1/);
});

t.test('a denied request gets the policy reasons and never reaches the upstream', async (t) => {
  const upstream = await startUpstream(t);
  const { gateway, viewer, server } = await setup(t, upstream);
  const denied = await send(gateway, 'POST', '/api/orders', { headers: { authorization: `Bearer ${viewer.key}`, 'content-type': 'application/json' }, body: '{}' });
  t.equal(denied.status, 403);
  t.equal(denied.headers['content-type'], 'application/problem+json');
  t.match(denied.json, { code: 'policy_denied', status: 403, reasons: ['no role of this key grants POST /api/orders'], policy: 'route-access-v1', route: 'orders', requestId: /^req_/ });
  t.equal(denied.headers['request-id'], denied.json.requestId);

  const sneaky = await send(gateway, 'GET', '/api/../admin/keys', { headers: { authorization: `Bearer ${viewer.key}` } });
  t.equal(sneaky.status, 403);
  t.ok(sneaky.json.reasons.includes('the path is not in normal form'), sneaky.body.toString());

  const anonymous = await send(gateway, 'GET', '/api/orders');
  t.equal(anonymous.status, 401);
  t.equal(anonymous.json.code, 'unauthenticated');
  t.match(anonymous.headers['www-authenticate'], /^Bearer realm="gatehouse"/);
  const unknown = await send(gateway, 'GET', '/api/orders', { headers: { authorization: 'Bearer gh_test_nope' } });
  t.equal(unknown.status, 401);
  t.match(unknown.json.detail, /is not known/);

  const unrouted = await send(gateway, 'GET', '/elsewhere', { headers: { authorization: `Bearer ${viewer.key}` } });
  t.equal(unrouted.status, 404);
  t.equal(unrouted.json.code, 'not_found');

  t.equal(upstream.received.length, 0, 'nothing was forwarded');
  const entries = await proxyEntries(server, 5);
  t.match(
    entries.map((e) => [e.route, e.status, e.code, e.proxy?.outcome]),
    [
      ['proxy:orders', 403, 'policy_denied', 'denied'],
      ['proxy:orders', 403, 'policy_denied', 'denied'],
      ['proxy:orders', 401, 'unauthenticated', 'denied'],
      ['proxy:orders', 401, 'unauthenticated', 'denied'],
      ['proxy:unmatched', 404, 'not_found', 'denied'],
    ],
  );
  t.match(entries[0]!.result, { allow: false, reasons: ['no role of this key grants POST /api/orders'] });
});

t.test('headers: hop-by-hop and the sidecar credentials stay here; X-Forwarded-* and traceparent go on', async (t) => {
  const upstream = await startUpstream(t, (req, res, received) => {
    received.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.alloc(0) });
    res.writeHead(200, { 'keep-alive': 'timeout=5', 'x-private-hop': 'upstream', connection: 'x-private-hop', 'x-kept': 'yes' });
    res.end('ok');
  });
  const { url, gateway, viewer } = await setup(t, upstream);
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  // Signed for the host the client addressed, as the gateway verifies it.
  const signer = await enrollSigner(url, viewer.key, viewer.id);
  const signature = signRequest({ method: 'GET', url: 'http://orders.example:8081/api/orders', headers: {} }, signer);
  const answer = await send(gateway, 'GET', '/api/orders', {
    headers: {
      authorization: `Bearer ${viewer.key}`,
      ...signature,
      connection: 'keep-alive, x-hop-named',
      'x-hop-named': 'drop me',
      'keep-alive': 'timeout=5',
      te: 'trailers',
      'proxy-authorization': 'Basic Zm9vOmJhcg==',
      'x-forwarded-for': '203.0.113.9',
      'x-forwarded-proto': 'https',
      'x-end-to-end': 'kept',
      traceparent,
      host: 'orders.example:8081',
    },
  });
  t.equal(answer.status, 200);
  const seen = upstream.received[0]!.headers;
  for (const name of ['authorization', 'signature', 'signature-input', 'x-hop-named', 'keep-alive', 'te', 'proxy-authorization']) {
    t.equal(seen[name], undefined, `${name} is not forwarded`);
  }
  t.equal(seen['x-end-to-end'], 'kept', 'end-to-end headers are');
  t.equal(seen['x-forwarded-for'], '203.0.113.9, 127.0.0.1', 'the client address is appended');
  t.equal(seen['x-forwarded-proto'], 'http', 'the proto is this connection’s');
  t.equal(seen['x-forwarded-host'], 'orders.example:8081');
  t.equal(seen['host'], `127.0.0.1:${upstream.port}`, 'the upstream sees its own host');
  t.equal(seen['traceparent'], traceparent, 'a valid traceparent is propagated');
  t.equal(seen['connection'], 'keep-alive', 'the upstream connection is kept alive');

  t.equal(answer.headers['x-kept'], 'yes');
  t.equal(answer.headers['x-private-hop'], undefined, 'response headers named in Connection are dropped');
  t.not(answer.headers['keep-alive'], 'timeout=5', 'the upstream keep-alive parameters are not passed back');

  await send(gateway, 'GET', '/api/orders', { headers: { authorization: `Bearer ${viewer.key}`, traceparent: 'garbage' } });
  t.match(upstream.received[1]!.headers['traceparent'], /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/, 'a malformed traceparent is replaced');
  t.not(upstream.received[1]!.headers['traceparent'], 'garbage');
});

t.test('the upstream’s base path and an IPv6 address hold on every request to the route', async (t) => {
  const received: { url: string; host: string | undefined }[] = [];
  const upstream = createServer((req, res) => {
    received.push({ url: req.url!, host: req.headers.host });
    res.end('ok');
  });
  await new Promise<void>((resolve) => upstream.listen(0, '::1', resolve));
  t.teardown(() => new Promise<void>((resolve) => upstream.close(() => resolve())));
  const port = (upstream.address() as AddressInfo).port;
  const { gateway, viewer } = await setup(t, { url: `http://[::1]:${port}/base` } as Upstream);
  for (const path of ['/api/orders?page=1', '/api/orders/7']) {
    const answer = await send(gateway, 'GET', path, { headers: { authorization: `Bearer ${viewer.key}` } });
    t.equal(answer.status, 200, path);
  }
  t.same(received, [
    { url: '/base/api/orders?page=1', host: `[::1]:${port}` },
    { url: '/base/api/orders/7', host: `[::1]:${port}` },
  ]);
});

t.test('the route policy reads the query: none is an empty object, a repeated name a list in order', async (t) => {
  const upstream = await startUpstream(t);
  const { gateway } = await setup(t, upstream, { auth: 'none', policy: 'query-probe-v1' });
  const statuses: number[] = [];
  for (const path of ['/api/items', '/api/items?tag=a&page=2&tag=b', '/api/items?tag=a&page=2', '/api/items?']) {
    statuses.push((await send(gateway, 'GET', path)).status);
  }
  t.same(statuses, [200, 200, 403, 200]);
  t.same(upstream.received.map((r) => r.url), ['/api/items', '/api/items?tag=a&page=2&tag=b', '/api/items?']);
});

t.test('a Signature field without Signature-Input is refused, not taken for an unsigned request', async (t) => {
  const upstream = await startUpstream(t);
  const { gateway, viewer } = await setup(t, upstream);
  const answer = await send(gateway, 'GET', '/api/orders', { headers: { authorization: `Bearer ${viewer.key}`, signature: 'sig1=:AAAA:' } });
  t.equal(answer.status, 401);
  t.match(answer.json, { code: 'signature_invalid', check: 'malformed' });
  t.equal(upstream.received.length, 0);
});

t.test('auth "none": the policy sees no principal, and the Authorization header is the upstream’s', async (t) => {
  const upstream = await startUpstream(t);
  const { gateway } = await setup(t, upstream, { auth: 'none' });
  const answer = await send(gateway, 'GET', '/api/public', { headers: { authorization: 'Basic dXBzdHJlYW06Y3JlZA==' } });
  t.equal(answer.status, 403, 'the bundled policy needs an authenticated principal');
  t.ok(answer.json.reasons.includes('the request has no authenticated principal'));

  const open = await startUpstream(t);
  const { gateway: openGateway } = await setup(t, open, { auth: 'none', policy: 'open-access-v1' });
  const forwarded = await send(openGateway, 'GET', '/api/public', { headers: { authorization: 'Basic dXBzdHJlYW06Y3JlZA==' } });
  t.equal(forwarded.status, 200);
  t.equal(open.received[0]!.headers['authorization'], 'Basic dXBzdHJlYW06Y3JlZA==', 'not ours, so passed on');
});

t.test('routes that require a signature refuse unsigned requests: 401, the caller can sign', async (t) => {
  const upstream = await startUpstream(t);
  const { gateway, viewer } = await setup(t, upstream, { requireSignature: true });
  const answer = await send(gateway, 'GET', '/api/orders', { headers: { authorization: `Bearer ${viewer.key}` } });
  t.equal(answer.status, 401);
  t.match(answer.json, { code: 'signature_required', policy: 'route-access-v1', route: 'orders', reasons: ['this route requires a signed request'] });
  t.equal(upstream.received.length, 0);
});

/** A WebSocket opened through the gateway with `key`, once a message has come back from the echoing upstream. */
async function openEchoed(t: Test, wsUrl: string, key: string): Promise<WebSocket> {
  const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${key}` } });
  t.teardown(() => ws.terminate());
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const echoed = new Promise<string>((resolve) => ws.once('message', (data) => resolve(String(data))));
  ws.send('hello');
  t.equal(await echoed, 'echo:hello', 'messages flow both ways');
  return ws;
}

t.test('a proxied WebSocket closes on both sides when either side goes, and when the gateway closes', async (t) => {
  const upstream = await startUpstream(t);
  const connections: WebSocket[] = [];
  echoWebSockets(t, upstream, connections);
  const { gateway, viewer, server } = await setup(t, upstream);
  const wsUrl = gateway.replace('http:', 'ws:') + '/api/live';
  const closed = (ws: WebSocket) =>
    new Promise<void>((resolve, reject) => {
      if (ws.readyState === ws.CLOSED) return resolve();
      const timer = setTimeout(() => reject(new Error('the connection stayed open')), 5000);
      ws.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  const connect = async () => {
    const client = await openEchoed(t, wsUrl, viewer.key);
    return { client, upstreamSide: connections.at(-1)! };
  };

  const cut = await connect();
  cut.client.terminate();
  await closed(cut.upstreamSide);
  t.pass('a client that drops its connection closes the upstream side');

  const hungUp = await connect();
  hungUp.upstreamSide.terminate();
  await closed(hungUp.client);
  t.pass('an upstream that drops its connection closes the client side');

  const open = await connect();
  await server.gateway!.close();
  await Promise.all([closed(open.client), closed(open.upstreamSide)]);
  t.pass('closing the gateway closes both sides of a connection it carried');
});

t.test('WebSocket upgrades are proxied under the same policy', async (t) => {
  const upstream = await startUpstream(t);
  const upgradeHeaders = echoWebSockets(t, upstream);
  const { gateway, viewer, auditor, server } = await setup(t, upstream);
  const wsUrl = gateway.replace('http:', 'ws:') + '/api/live';

  const ws = await openEchoed(t, wsUrl, viewer.key);
  t.equal(upgradeHeaders[0]!['authorization'], undefined, 'the key is not passed upstream');
  t.match(upgradeHeaders[0]!['traceparent'], /^00-/);
  ws.close();

  const refused = await new Promise<number>((resolve, reject) => {
    const denied = new WebSocket(gateway.replace('http:', 'ws:') + '/admin/live', { headers: { authorization: `Bearer ${viewer.key}` } });
    denied.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode!);
      denied.terminate();
    });
    denied.once('open', () => reject(new Error('a denied upgrade opened')));
    denied.once('error', () => {});
  });
  t.equal(refused, 404, 'no route for /admin: refused before any policy');

  const forbidden = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const denied = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${auditor.key}` } });
    denied.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    denied.once('open', () => reject(new Error('a denied upgrade opened')));
    denied.once('error', () => {});
  });
  t.equal(forbidden.status, 403, 'a key with no role granting the path is refused');
  t.match(JSON.parse(forbidden.body), { code: 'policy_denied', reasons: ['no role of this key grants GET /api/live'] });
  t.equal(upgradeHeaders.length, 1, 'only the allowed upgrade reached the upstream');

  const entries = await proxyEntries(server, 3);
  t.match(
    entries.map((e) => [e.path, e.status, e.proxy?.outcome]),
    [
      ['/api/live', 101, 'forwarded'],
      ['/admin/live', 404, 'denied'],
      ['/api/live', 403, 'denied'],
    ],
  );
});
