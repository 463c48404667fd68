import t from 'tap';
import { RateLimiter } from '../core/rate-limiter.ts';
import { call, issueKey, startTestServer } from './helpers/gatehouse.ts';

t.test('token buckets refill at the configured rate', async (t) => {
  const limiter = new RateLimiter({ sandbox: { ratePerSecond: 2, burst: 2 }, production: { ratePerSecond: 10, burst: 10 } });
  t.ok(limiter.take('k', 'sandbox', 0).allowed);
  t.ok(limiter.take('k', 'sandbox', 0).allowed);
  const refused = limiter.take('k', 'sandbox', 0);
  t.notOk(refused.allowed);
  t.equal(refused.retryAfterSeconds, 1);
  t.equal(refused.remaining, 0);
  t.ok(limiter.take('k', 'sandbox', 500).allowed, 'half a second buys one token at 2/s');
  t.notOk(limiter.take('k', 'sandbox', 500).allowed);
  t.ok(limiter.take('other', 'sandbox', 500).allowed, 'buckets are per key');
});

t.test('429 with Retry-After and RateLimit headers, per key', async (t) => {
  const { url, admin } = await startTestServer(t, { rateLimits: { sandbox: { ratePerSecond: 0.5, burst: 3 } } });
  const key = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  const answers = [];
  for (let i = 0; i < 4; i++) answers.push(await call(url, 'GET', '/v1/decisions', { key: key.key }));
  t.same(answers.map((a) => a.status), [200, 200, 200, 429]);
  t.same(answers.map((a) => a.headers.get('ratelimit-remaining')), ['2', '1', '0', '0']);
  const refused = answers[3]!;
  t.equal(refused.json.code, 'rate_limited');
  t.equal(refused.headers.get('retry-after'), '2');
  t.equal(refused.headers.get('ratelimit-limit'), '3');
  t.ok(Number(refused.headers.get('ratelimit-reset')) >= 1);
  const other = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  t.equal((await call(url, 'GET', '/v1/decisions', { key: other.key })).status, 200, 'another key has its own bucket');
  const metrics = await call(url, 'GET', '/metrics');
  t.match(metrics.text, /gatehouse_rate_limited_total\{env="sandbox"\} 1/);
});
