import t, { type Test } from 'tap';
import { Webhook } from 'standardwebhooks';
import { bundledEngine } from './helpers/policies.ts';
import { call, issueKey, startTestServer } from './helpers/gatehouse.ts';
import { startReceiver, type Received } from './helpers/webhook-receiver.ts';

// Webhooks end to end: configuration, Standard Webhooks signatures checked by the
// `standardwebhooks` package, retries that keep order, disabling, replay and the SSRF guard,
// against receivers on 127.0.0.1 (allowed explicitly: the guard refuses loopback otherwise).

t.setTimeout(600_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

const FAST = { allow: ['127.0.0.1'], retryScheduleMs: [50, 100, 150, 200, 250], attemptTimeoutMs: 2_000, pollMs: 200 };

async function setup(t: Test, webhooks: object = FAST) {
  const { url, admin } = await startTestServer(t, { policies: engine, webhooks });
  const manager = await issueKey(url, admin, { env: 'sandbox', scopes: ['webhooks:manage', 'decisions:write', 'decisions:read'] });
  const as = (path: string, method = 'GET', body?: unknown) => call(url, method, path, { key: manager.key, ...(body !== undefined ? { body } : {}) });
  const hook = async (target: string, events: string[] = ['decision.*']) => {
    const answer = await as('/v1/webhooks/config', 'POST', { url: target, events, description: 'test receiver' });
    if (answer.status !== 201) throw new Error(`creating the endpoint failed: ${answer.status} ${answer.text}`);
    return answer.json as { id: string; secret: string };
  };
  const decide = async (score: number) => {
    const answer = await as('/v1/decisions', 'POST', { title: `risk ${score}`, policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: score }] });
    if (answer.status !== 200) throw new Error(`create failed: ${answer.status} ${answer.text}`);
    return answer.json as { id: string };
  };
  return { url, admin, manager, as, hook, decide };
}

const payload = (r: Received) => JSON.parse(r.body);

/** Asks until `done` holds, every 50 ms for at most 10 s. */
async function eventually<T>(ask: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await ask();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
const delivered = (received: Received[]) => received.filter((r) => r.status === 200);

t.test('endpoints: create, read, list, update, rotate the secret, delete', async (t) => {
  const { as, hook, url, admin } = await setup(t);
  const receiver = await startReceiver(t);
  const created = await hook(receiver.url);
  t.match(created, { id: /^whk_/, url: receiver.url, events: ['decision.*'], description: 'test receiver', enabled: true, secret: /^whsec_[A-Za-z0-9+/]+=*$/ });

  const one = await as(`/v1/webhooks/config/${created.id}`);
  t.equal(one.status, 200);
  t.notOk('secret' in one.json || 'secrets' in one.json, 'the secret is shown only once');
  t.same((await as('/v1/webhooks/config')).json.data.map((e: { id: string }) => e.id), [created.id]);
  const other = await issueKey(url, admin, { env: 'sandbox', scopes: ['webhooks:manage'] });
  const production = await issueKey(url, admin, { env: 'production', scopes: ['webhooks:manage'] });
  t.ok(production.id, 'a production key exists');
  t.equal((await call(url, 'GET', '/v1/webhooks/config', { key: other.key })).json.data.length, 1, 'same environment, other key: visible');

  const patched = await as(`/v1/webhooks/config/${created.id}`, 'PATCH', { events: ['decision.created', 'key.*'], description: null });
  t.equal(patched.status, 200, patched.text);
  t.match(patched.json, { events: ['decision.created', 'key.*'], description: null });
  t.equal((await as(`/v1/webhooks/config/${created.id}`, 'PATCH', {})).status, 400, 'an empty change is refused');
  t.equal((await as(`/v1/webhooks/config/${created.id}`, 'PATCH', { events: ['not a kind'] })).status, 400);

  const rotated = await as(`/v1/webhooks/config/${created.id}/rotate-secret`, 'POST', { graceSeconds: 3600 });
  t.equal(rotated.status, 200, rotated.text);
  t.not(rotated.json.secret, created.secret, 'a new secret');
  t.ok(rotated.json.previousSecretExpiresAt, 'the old one is in its grace period');
  const test = await as(`/v1/webhooks/config/${created.id}/test`, 'POST');
  t.equal(test.status, 202, test.text);
  t.match(test.json, { id: /^dlv_/, kind: 'webhook.test', status: 'pending' });
  await receiver.waitFor((r) => r.length === 1);
  const [message] = receiver.received;
  t.equal(String(message!.headers['webhook-signature']).split(' ').length, 2, 'signed by both secrets during the grace period');
  t.match(new Webhook(rotated.json.secret).verify(message!.body, message!.headers as Record<string, string>), { type: 'webhook.test' }, 'the new secret verifies');
  t.match(new Webhook(created.secret).verify(message!.body, message!.headers as Record<string, string>), { type: 'webhook.test' }, 'and so does the old one');

  const removed = await as(`/v1/webhooks/config/${created.id}`, 'DELETE');
  t.equal(removed.status, 200);
  t.equal((await as(`/v1/webhooks/config/${created.id}`)).status, 404, 'gone');
  t.equal((await as('/v1/webhooks/config')).json.data.length, 0);
  t.equal((await as('/v1/webhooks/config/whk_nope/test', 'POST')).status, 404);
});

t.test('every delivery verifies with standardwebhooks and arrives in order', async (t) => {
  const { hook, decide, as } = await setup(t);
  const receiver = await startReceiver(t);
  const endpoint = await hook(receiver.url, ['decision.created', 'decision.cancelled']);
  const verifier = new Webhook(endpoint.secret);
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await decide(10 + i)).id);
  t.equal((await as(`/v1/decisions/${ids[0]}/cancel`, 'POST')).status, 200);
  await receiver.waitFor((r) => r.length === 6);
  for (const r of receiver.received) {
    const body = verifier.verify(r.body, r.headers as Record<string, string>) as { type: string };
    t.ok(body.type, `verified ${r.headers['webhook-id']}`);
  }
  t.same(receiver.received.map((r) => payload(r).type), [...Array(5).fill('decision.created'), 'decision.cancelled'], 'only the kinds asked for');
  t.same(receiver.received.slice(0, 5).map((r) => payload(r).data.id), ids, 'in order');
  t.ok(receiver.received.every((r) => /^evt_/.test(String(r.headers['webhook-id']))), 'webhook-id is the event id');
  const cursors = receiver.received.map((r) => payload(r).cursor);
  t.same(cursors, [...cursors].sort((a, b) => a - b), 'cursors increase');
  t.throws(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(receiver.received[0]!.body, receiver.received[0]!.headers as Record<string, string>), 'another secret does not verify');

  // The receiver answers before the sidecar records the attempt: wait for the log to catch up.
  const log = await eventually(
    () => as(`/v1/webhooks/config/${endpoint.id}/deliveries?limit=4`),
    (answer) => answer.json.data[0]?.status === 'delivered',
  );
  t.equal(log.status, 200);
  t.equal(log.json.data.length, 4);
  t.equal(log.json.data[0].kind, 'decision.cancelled', 'newest first');
  t.match(log.json.data[0].attempts, [{ status: 200, latencyMs: Number, response: 'thanks', error: null }]);
  const rest = await as(`/v1/webhooks/config/${endpoint.id}/deliveries?limit=4&cursor=${log.json.nextCursor}`);
  t.equal(rest.json.data.length, 2, 'the second page');
  t.equal(rest.json.nextCursor, null);

  const replay = await as(`/v1/webhooks/config/${endpoint.id}/deliveries/${rest.json.data[1].id}/replay`, 'POST');
  t.equal(replay.status, 202, replay.text);
  await receiver.waitFor((r) => r.length === 7);
  t.equal(receiver.received[6]!.headers['webhook-id'], receiver.received[0]!.headers['webhook-id'], 'a replay keeps the webhook-id');
  t.equal(receiver.received[6]!.body, receiver.received[0]!.body, 'and the body');
});

t.test('a receiver that fails, then recovers, gets every event exactly once and in order', async (t) => {
  const { hook, decide, as } = await setup(t);
  // The first five requests fail (500, then a timeout-free refusal of sorts: 404), then it recovers.
  const receiver = await startReceiver(t, (n) => (n <= 3 ? 500 : n <= 5 ? 404 : 200));
  const endpoint = await hook(receiver.url, ['decision.created']);
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push((await decide(10 + i)).id);
  await receiver.waitFor((r) => delivered(r).length === 4);
  const ok = delivered(receiver.received);
  t.same(ok.map((r) => payload(r).data.id), ids, 'each event once, in order');
  t.equal(new Set(ok.map((r) => r.headers['webhook-id'])).size, 4, 'no duplicate');
  const failed = receiver.received.filter((r) => r.status !== 200);
  t.equal(failed.length, 5);
  t.ok(failed.every((r) => payload(r).data.id === ids[0]), 'later events waited while the first was failing');
  const log = (await as(`/v1/webhooks/config/${endpoint.id}/deliveries`)).json.data;
  const first = log.at(-1);
  t.same(first.attempts.map((a: { status: number }) => a.status), [500, 500, 500, 404, 404, 200], 'the attempt log');
  t.match(first.attempts[0], { response: /failing on purpose/ });
  t.equal(first.status, 'delivered');
  t.equal((await as(`/v1/webhooks/config/${endpoint.id}`)).json.consecutiveFailures, 0, 'a success resets the failure run');
});

t.test('an endpoint is disabled after a run of failures, with an event; enabling it resumes delivery', async (t) => {
  const { hook, decide, as } = await setup(t, { ...FAST, disableAfterFailures: 3, retryScheduleMs: [30, 30, 30, 30, 30, 30] });
  let healthy = false;
  const failing = await startReceiver(t, () => (healthy ? 200 : 503));
  const watcher = await startReceiver(t);
  const broken = await hook(failing.url, ['decision.created']);
  await hook(watcher.url, ['webhook.endpoint_disabled']);
  const d = await decide(10);
  await watcher.waitFor((r) => r.length === 1);
  const event = payload(watcher.received[0]!);
  t.match(event, { type: 'webhook.endpoint_disabled', topic: `webhooks/${broken.id}`, data: { id: broken.id, enabled: false, disabledReason: /3 delivery attempts failed in a row/ } });
  t.equal(failing.received.length, 3, 'no attempt after disabling');
  const state = (await as(`/v1/webhooks/config/${broken.id}`)).json;
  t.match(state, { enabled: false, consecutiveFailures: 3 });
  t.equal((await as(`/v1/webhooks/config/${broken.id}/test`, 'POST')).status, 409, 'a disabled endpoint takes no test message');

  healthy = true;
  const enabled = await as(`/v1/webhooks/config/${broken.id}`, 'PATCH', { enabled: true });
  t.match(enabled.json, { enabled: true, disabledReason: null, consecutiveFailures: 0 });
  await failing.waitFor((r) => delivered(r).length === 1);
  t.equal(payload(delivered(failing.received)[0]!).data.id, d.id, 'the pending delivery goes through once enabled');
});

t.test('the SSRF guard refuses private, loopback, link-local and metadata addresses unless allowed', async (t) => {
  const { as } = await setup(t, { ...FAST, allow: [] });
  for (const target of ['http://127.0.0.1:9/x', 'http://169.254.169.254/latest/meta-data', 'http://10.1.2.3/', 'http://[::1]:8080/', 'http://localhost:9/', 'http://100.64.0.1/', 'http://[fd00::1]/', 'http://0.0.0.0/']) {
    const answer = await as('/v1/webhooks/config', 'POST', { url: target, events: ['*'] });
    t.equal(answer.status, 400, `${target} refused`);
    t.match(answer.json, { code: 'invalid_request', errors: [{ path: 'body/url', message: /not a public address|does not resolve/ }] });
  }
  t.equal((await as('/v1/webhooks/config', 'POST', { url: 'ftp://example.com/', events: ['*'] })).status, 400, 'http(s) only');
  t.equal((await as('/v1/webhooks/config', 'POST', { url: 'http://u:p@8.8.8.8/', events: ['*'] })).status, 400, 'no credentials in the URL');
  // Subscribed to an event this test never causes, so nothing is ever sent to the public address.
  const ok = await as('/v1/webhooks/config', 'POST', { url: 'http://8.8.8.8/hook', events: ['key.revoked'] });
  t.equal(ok.status, 201, 'a public address is accepted');
  const moved = await as(`/v1/webhooks/config/${ok.json.id}`, 'PATCH', { url: 'http://192.168.1.1/' });
  t.equal(moved.status, 400, 'checked again when the URL changes');
});

t.test('webhook routes need the webhooks:manage scope', async (t) => {
  const { url, admin } = await setup(t);
  const reader = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  const answer = await call(url, 'GET', '/v1/webhooks/config', { key: reader.key });
  t.equal(answer.status, 403);
  t.equal(answer.json.required, 'webhooks:manage');
});
