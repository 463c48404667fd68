import t from 'tap';
import { entryHash, type AuditEntry } from '../core/audit-log.ts';
import { RateLimiter } from '../core/rate-limiter.ts';
import { clientOf, UNAUTHENTICATED_LIMIT } from '../core/unauthenticated-throttle.ts';
import { call, issueKey, startTestServer, tempDir, type Answer } from './helpers/gatehouse.ts';
import { OPEN_ACCESS, proxyEntries, routePolicies, routesFile, send, startUpstream } from './helpers/upstream.ts';

// Refusals of callers nobody authenticated are limited per client address before anything is
// stored: within the limit each is recorded, beyond it the caller gets 429 and the refusals are
// counted into one audit entry per client per flush. Authenticated callers are not affected.

// Compiling the route policies on a cold cache takes a while.
t.setTimeout(600_000);

const N = 300;
const BURST = UNAUTHENTICATED_LIMIT.burst;

t.test('a flood of garbage keys from one address grows the audit log by a bounded number of entries', async (t) => {
  const { server, url, admin } = await startTestServer(t);
  const { audit, store } = server.services;
  const events = store.database('events');
  const firstSeq = audit.tail().seq;
  const eventsBefore = events.getCount();

  const answers: Answer[] = [];
  for (let i = 0; i < N; i += 50) {
    const batch = Array.from({ length: 50 }, (_, j) =>
      j % 5 === 4
        ? call(url, 'GET', `/v1/no-such-route-${i + j}`)
        : call(url, 'POST', '/v1/decisions', { key: `garbage-${i + j}`, body: { title: 'x', policy: 'p', context: 'c' } }),
    );
    answers.push(...(await Promise.all(batch)));
  }
  const recorded = answers.filter((a) => a.status !== 429);
  const throttled = answers.filter((a) => a.status === 429);
  t.ok(recorded.length >= BURST, `the first ${BURST} refusals are answered as decided (${recorded.length})`);
  // Refills at 0.2/s: a few more only if the flood took seconds.
  t.ok(recorded.length <= BURST + 4, `beyond the burst, refusals are throttled (${recorded.length} not)`);
  t.ok(recorded.every((a) => a.status === 401 || a.status === 404), 'what is not throttled is the refusal as decided');
  t.match(throttled[0]?.json, { status: 429, code: 'rate_limited', detail: /too many unauthenticated requests from this address/ });
  const wellFormed = (a: Answer) =>
    a.headers.get('content-type') === 'application/problem+json' && a.json?.status === 429 && Number(a.headers.get('retry-after')) >= 1;
  t.equal(throttled.filter(wellFormed).length, throttled.length, 'every throttled answer is a 429 problem with Retry-After');

  const stored = (from: number) => [...audit.all()].filter((e) => e.seq > from);
  t.equal(stored(firstSeq).length, recorded.length, 'one entry per refusal recorded, none per throttled one');
  t.equal(events.getCount(), eventsBefore, 'no event for any unauthenticated call');

  const valid = await call(url, 'GET', '/v1/decisions', { key: admin });
  t.equal(valid.status, 200, 'a valid key from the same address still works');

  const beforeFlush = audit.tail().seq;
  await server.services.unauthenticated.flush();
  const aggregate = stored(beforeFlush);
  t.equal(aggregate.length, 1, 'the throttled refusals are one entry');
  t.match(aggregate[0], {
    method: 'SYSTEM',
    route: 'unauthenticated refusals',
    status: 429,
    code: 'rate_limited',
    keyId: null,
    throttled: { client: '127.0.0.1', refused: throttled.length, from: String, to: String },
  });
  const { hash, ...rest } = aggregate[0] as AuditEntry;
  t.equal(entryHash(rest), hash, 'the aggregate entry is chained like any other');

  await server.services.unauthenticated.flush();
  t.equal(audit.tail().seq, aggregate[0]!.seq, 'a flush with nothing counted writes nothing');
});

t.test('the proxy gateway throttles unauthenticated refusals the same way', async (t) => {
  const engine = await routePolicies(t, {}, OPEN_ACCESS);
  t.teardown(() => engine.close());
  const upstream = await startUpstream(t);
  const file = routesFile(tempDir(t), [{ name: 'open', match: { pathPrefix: '/api' }, upstream: upstream.url, policy: 'open-access-v1', auth: 'api-key' }]);
  const { server, url, admin } = await startTestServer(t, { policies: engine, proxy: { routesFile: file, port: 0 } });
  const gateway = server.gateway!.url;
  const viewer = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });

  const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => send(gateway, 'GET', '/api/x', { headers: { authorization: `Bearer garbage-${i}` } })));
  const refused = answers.filter((a) => a.status === 401).length;
  const throttled = answers.filter((a) => a.status === 429 && a.json?.code === 'rate_limited' && Number(a.headers['retry-after']) >= 1).length;
  t.ok(refused >= BURST && refused <= BURST + 4, `the burst is answered 401 (${refused})`);
  t.equal(refused + throttled, answers.length, 'the rest are 429 with Retry-After');

  const valid = await send(gateway, 'GET', '/api/x', { headers: { authorization: `Bearer ${viewer.key}` } });
  t.equal(valid.status, 200, 'a valid key from the same address is forwarded');
  const entries = await proxyEntries(server, refused + 1);
  t.equal(entries.length, refused + 1, 'one entry per 401 and the forwarded request, none per 429');
  t.equal(upstream.received.length, 1, 'only the valid request reached the upstream');
});

t.test('clients: IPv4 as is, IPv4-mapped as IPv4, IPv6 by its /64', async (t) => {
  t.equal(clientOf('127.0.0.1'), '127.0.0.1');
  t.equal(clientOf('0000:0000:0000:0000:0000:ffff:7f00:0001'), '127.0.0.1', 'as uWS reports a v4 peer on a dual-stack socket');
  t.equal(clientOf('::ffff:10.1.2.3'), '10.1.2.3', 'as Node reports it');
  t.equal(clientOf('2001:0db8:0001:0002:0003:0004:0005:0006'), '2001:db8:1:2::/64');
  t.equal(clientOf('2001:db8:1:2:ffff::1'), '2001:db8:1:2::/64', 'addresses of one /64 share a bucket');
  t.not(clientOf('2001:db8:1:3::1'), clientOf('2001:db8:1:2::1'), 'another /64 has its own');
  t.equal(clientOf(''), '', 'an address the socket could not tell is one client');
});

t.test('sweeping forgets only buckets that have refilled', async (t) => {
  const limiter = new RateLimiter({ tier: { ratePerSecond: 1, burst: 2 } });
  limiter.take('a', 'tier', 0);
  limiter.take('b', 'tier', 0);
  limiter.take('b', 'tier', 1500);
  limiter.take('b', 'tier', 1500);
  limiter.sweep(1500);
  const size = (limiter as unknown as { buckets: Map<string, unknown> }).buckets.size;
  t.equal(size, 1, 'a (full again) is forgotten, b (empty) is kept');
  t.equal(limiter.take('b', 'tier', 1500).allowed, false, 'the kept bucket is still empty');
});

t.test('the limit is configurable (--rate-unauthenticated)', async (t) => {
  const { url } = await startTestServer(t, { unauthenticatedLimit: { ratePerSecond: 0.01, burst: 3 } });
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await call(url, 'GET', '/v1/decisions', { key: `garbage-${i}` })).status);
  t.same(statuses, [401, 401, 401, 429, 429, 429], 'a burst of 3, then throttled');
});
