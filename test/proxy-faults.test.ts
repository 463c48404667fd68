import t, { type Test } from 'tap';
import { startTestServer, tempDir } from './helpers/gatehouse.ts';
import { closedPort, OPEN_ACCESS, proxyEntries, routePolicies, routesFile, send, startUpstream } from './helpers/upstream.ts';

// Upstream faults: refused connections are 502, silence beyond the route's timeout is 504, both
// problem+json; retries happen only for idempotent, bodiless requests on routes that allow them.

t.setTimeout(600_000);
const engine = await routePolicies(t, {}, OPEN_ACCESS);
t.teardown(() => engine.close());

async function gatewayFor(t: Test, routes: Record<string, unknown>[]) {
  const file = routesFile(
    tempDir(t),
    routes.map((r) => ({ policy: 'open-access-v1', auth: 'none', ...r })),
  );
  const { server } = await startTestServer(t, { policies: engine, proxy: { routesFile: file, port: 0 } });
  return { gateway: server.gateway!.url, server };
}

t.test('an upstream that refuses connections is a 502', async (t) => {
  const port = await closedPort();
  const { gateway, server } = await gatewayFor(t, [{ name: 'down', match: { pathPrefix: '/' }, upstream: `http://127.0.0.1:${port}` }]);
  const answer = await send(gateway, 'GET', '/anything');
  t.equal(answer.status, 502);
  t.equal(answer.headers['content-type'], 'application/problem+json');
  t.match(answer.json, { code: 'upstream_unavailable', status: 502, route: 'down', attempts: 1 });
  const [entry] = await proxyEntries(server, 1);
  t.match(entry, { status: 502, code: 'upstream_unavailable', proxy: { outcome: 'failed', upstreamStatus: null, upstreamLatencyMs: null } });
});

t.test('an upstream silent beyond the route timeout is a 504', async (t) => {
  const upstream = await startUpstream(t, () => {
    // Never answers.
  });
  const { gateway } = await gatewayFor(t, [{ name: 'slow', match: { pathPrefix: '/' }, upstream: upstream.url, timeoutMs: 200 }]);
  const answer = await send(gateway, 'GET', '/slow', { timeoutMs: 5_000 });
  t.equal(answer.status, 504);
  t.match(answer.json, { code: 'upstream_timeout', detail: /within 200 ms/ });
});

t.test('a failing upstream is retried for GET, not for POST, and not where the route does not allow it', async (t) => {
  // Drops the first connection of each method without answering, then answers.
  const hits: Record<string, number> = {};
  const upstream = await startUpstream(t, (req, res) => {
    const n = (hits[`${req.method} ${req.url}`] = (hits[`${req.method} ${req.url}`] ?? 0) + 1);
    if (n === 1) {
      req.socket.destroy();
      return;
    }
    req.resume();
    req.on('end', () => res.end('second time'));
  });
  const { gateway, server } = await gatewayFor(t, [
    { name: 'retrying', match: { pathPrefix: '/retry' }, upstream: upstream.url, retry: { attempts: 3, backoffMs: 10 } },
    { name: 'plain', match: { pathPrefix: '/plain' }, upstream: upstream.url },
  ]);
  const get = await send(gateway, 'GET', '/retry/a');
  t.equal(get.status, 200);
  t.equal(get.body.toString(), 'second time');
  t.equal(hits['GET /retry/a'], 2, 'GET was tried again');
  const [entry] = await proxyEntries(server, 1);
  t.match(entry, { status: 200, code: null, proxy: { outcome: 'forwarded', upstreamStatus: 200 } }, 'a try that got its answer is no failure');

  const post = await send(gateway, 'POST', '/retry/b', { headers: { 'content-type': 'text/plain' }, body: 'pay once' });
  t.equal(post.status, 502);
  t.equal(hits['POST /retry/b'], 1, 'POST was not');

  const plain = await send(gateway, 'GET', '/plain/c');
  t.equal(plain.status, 502);
  t.equal(hits['GET /plain/c'], 1, 'a route without retry does not retry');
});

t.test('retries give up after the attempts the route allows', async (t) => {
  let hits = 0;
  const upstream = await startUpstream(t, (req) => {
    hits++;
    req.socket.destroy();
  });
  const { gateway } = await gatewayFor(t, [{ name: 'flaky', match: { pathPrefix: '/' }, upstream: upstream.url, retry: { attempts: 3, backoffMs: 5 } }]);
  const answer = await send(gateway, 'DELETE', '/thing');
  t.equal(answer.status, 502);
  t.equal(answer.json.attempts, 3);
  t.equal(hits, 3);
});
