import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { matchRoute } from '../proxy/gateway/route-match.ts';
import { parseRoutes, RoutesFileError, RoutesSource } from '../proxy/gateway/routes-config.ts';
import { startTestServer, tempDir } from './helpers/gatehouse.ts';
import { OPEN_ACCESS, routePolicies, routesFile, send, startUpstream } from './helpers/upstream.ts';

// The routes file: validated whole (a bad one names the field and keeps the routes in force),
// JSON or YAML, reloaded when it changes; and how requests are matched to routes.

t.setTimeout(600_000);

const ROUTE = { name: 'orders', match: { pathPrefix: '/api' }, upstream: 'http://127.0.0.1:9001', policy: 'route-access-v1', auth: 'api-key' };
/** A server without JWT issuers. */
const API_KEYS_ONLY = { jwt: false };

async function until<T>(read: () => T | Promise<T>, ok: (value: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = await read();
    if (ok(value)) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

t.test('a valid file fills in the defaults', async (t) => {
  const [route] = parseRoutes(JSON.stringify({ routes: [ROUTE] }), 'routes.json', API_KEYS_ONLY);
  t.match(route, { name: 'orders', host: null, pathPrefix: '/api', methods: null, policy: 'route-access-v1', auth: 'api-key', requireSignature: false, timeoutMs: 30_000, retry: { attempts: 1, backoffMs: 0 } });
  t.equal(route!.upstream.href, 'http://127.0.0.1:9001/');
});

t.test('YAML works the same', async (t) => {
  const yaml = `routes:\n  - name: billing\n    match: { host: Billing.Example, pathPrefix: /billing, methods: [GET, POST] }\n    upstream: http://127.0.0.1:9002/base\n    policy: route-access-v1\n    auth: none\n    timeoutMs: 500\n    retry: { attempts: 2, backoffMs: 50 }\n`;
  const [route] = parseRoutes(yaml, 'routes.yaml', API_KEYS_ONLY);
  t.match(route, { name: 'billing', host: 'billing.example', auth: 'none', timeoutMs: 500, retry: { attempts: 2, backoffMs: 50 } });
  t.same([...route!.methods!], ['GET', 'POST']);
  t.equal(route!.upstream.pathname, '/base');
});

t.test('a bad file names the field', async (t) => {
  const cases: [unknown, string, RegExp][] = [
    [{ routes: [{ ...ROUTE, upstream: 'ftp://x' }] }, '/routes/0/upstream', /Expected string to match/],
    [{ routes: [ROUTE, { ...ROUTE, auth: 'basic' }] }, '/routes/1/auth', /./],
    [{ routes: [{ ...ROUTE, match: { pathPrefix: 'api' } }] }, '/routes/0/match/pathPrefix', /Expected string to match/],
    [{ routes: [{ ...ROUTE, timeoutMs: -1 }] }, '/routes/0/timeoutMs', /greater or equal/],
    [{ routes: [{ ...ROUTE, retry: { attempts: 0, backoffMs: 1 } }] }, '/routes/0/retry/attempts', /greater or equal/],
    [{ routes: [{ ...ROUTE, extra: true }] }, '/routes/0/extra', /./],
    [{ routes: [ROUTE, ROUTE] }, '/routes/1/name', /duplicates \/routes\/0\/name/],
  ];
  for (const [doc, pointer, message] of cases) {
    const error = t.throws(() => parseRoutes(JSON.stringify(doc), 'routes.json', API_KEYS_ONLY)) as RoutesFileError;
    t.ok(error instanceof RoutesFileError);
    const problem = error.problems.find((p) => p.pointer === pointer);
    t.ok(problem, `${pointer} named in ${error.message}`);
    t.match(problem?.message, message);
  }
  const jwt = { routes: [ROUTE, { ...ROUTE, name: 'sso', auth: 'jwt' }] };
  const unserved = t.throws(() => parseRoutes(JSON.stringify(jwt), 'routes.json', API_KEYS_ONLY)) as RoutesFileError;
  t.same(unserved.problems, [{ pointer: '/routes/1/auth', message: 'route sso authenticates with JWTs, but no JWT issuers are configured (GATEHOUSE_JWT_ISSUERS)' }]);
  t.equal(parseRoutes(JSON.stringify(jwt), 'routes.json', { jwt: true })[1]!.auth, 'jwt', 'with issuers, JWT routes load');
  const broken = t.throws(() => parseRoutes('{"routes": [', 'routes.json', API_KEYS_ONLY)) as RoutesFileError;
  t.match(broken.message, /not valid JSON/);
});

t.test('matching: first route in file order, whole path segments, host without port, methods', async (t) => {
  const routes = parseRoutes(
    JSON.stringify({
      routes: [
        { ...ROUTE, name: 'billing-host', match: { host: 'billing.example', pathPrefix: '/' } },
        { ...ROUTE, name: 'writes', match: { pathPrefix: '/api', methods: ['POST'] } },
        { ...ROUTE, name: 'api', match: { pathPrefix: '/api/' } },
        { ...ROUTE, name: 'root', match: { pathPrefix: '/' } },
      ],
    }),
    'routes.json',
    API_KEYS_ONLY,
  );
  const name = (method: string, host: string | undefined, path: string) => matchRoute(routes, method, host, path)?.name;
  t.equal(name('GET', 'Billing.Example:8081', '/api/x'), 'billing-host');
  t.equal(name('POST', 'other', '/api/x'), 'writes');
  t.equal(name('GET', 'other', '/api'), 'api');
  t.equal(name('GET', 'other', '/api/x'), 'api');
  t.equal(name('GET', 'other', '/apiary'), 'root', 'a prefix never captures a longer segment');
  t.equal(matchRoute(routes.slice(1, 3), 'GET', undefined, '/apiary'), null);
});

t.test('the file is reloaded on change; a bad change keeps the routes in force and says why', async (t) => {
  const dir = tempDir(t);
  const file = routesFile(dir, [ROUTE]);
  const logs: string[] = [];
  const source = await RoutesSource.open(file, { info: (m) => logs.push(`info: ${m}`), error: (m) => logs.push(`error: ${m}`) }, API_KEYS_ONLY, { debounceMs: 20 });
  t.teardown(() => source.close());
  t.same(source.current().map((r) => r.name), ['orders']);

  routesFile(dir, [ROUTE, { ...ROUTE, name: 'billing', match: { pathPrefix: '/billing' } }]);
  await until(() => source.current().map((r) => r.name).join(), (names) => names === 'orders,billing', 'the reload');
  t.match(logs.at(-1), /^info: proxy routes reloaded .*orders, billing/);

  writeFileSync(file, JSON.stringify({ routes: [{ ...ROUTE, upstream: 'not a url' }] }));
  await until(() => logs.length, (n) => n >= 2, 'the refusal');
  t.match(logs.at(-1), /^error: proxy routes not reloaded, keeping the previous 2: .*\/routes\/0\/upstream/);
  t.same(source.current().map((r) => r.name), ['orders', 'billing'], 'the previous routes stay');

  writeFileSync(file, JSON.stringify({ routes: [ROUTE, { ...ROUTE, name: 'sso', auth: 'jwt' }] }));
  await until(() => logs.length, (n) => n >= 3, 'the JWT route refusal');
  t.match(logs.at(-1), /^error: proxy routes not reloaded, keeping the previous 2: .*\/routes\/1\/auth: route sso authenticates with JWTs, but no JWT issuers are configured/);
  t.same(source.current().map((r) => r.name), ['orders', 'billing'], 'a JWT route without issuers keeps the previous routes');

  await t.rejects(RoutesSource.open(join(dir, 'missing.json'), { info: () => {}, error: () => {} }, API_KEYS_ONLY, { watch: false }), 'a missing file at start is an error');
});

t.test('the running gateway follows the file', async (t) => {
  const engine = await routePolicies(t, {}, OPEN_ACCESS);
  t.teardown(() => engine.close());
  const first = await startUpstream(t);
  const second = await startUpstream(t);
  const dir = tempDir(t);
  const route = { name: 'svc', match: { pathPrefix: '/' }, policy: 'open-access-v1', auth: 'none' };
  const file = routesFile(dir, [{ ...route, upstream: first.url }]);
  const { server } = await startTestServer(t, { policies: engine, proxy: { routesFile: file, port: 0 } });
  const gateway = server.gateway!.url;
  t.equal((await send(gateway, 'GET', '/x')).status, 200);
  t.equal(first.received.length, 1);

  routesFile(dir, [{ ...route, upstream: second.url }]);
  await until(async () => (await send(gateway, 'GET', '/y')).status, () => second.received.length > 0, 'the new upstream');
  const before = first.received.length;

  writeFileSync(file, '{"routes": [{"name": "svc"}]}');
  await new Promise((r) => setTimeout(r, 300));
  t.equal((await send(gateway, 'GET', '/z')).status, 200, 'a broken file leaves the gateway serving');
  t.equal(first.received.length, before, 'still on the routes loaded before');
  t.equal(second.received.at(-1)!.url, '/z');
});
