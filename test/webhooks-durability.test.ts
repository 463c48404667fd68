import t from 'tap';
import { call, issueKey, tempDir } from './helpers/gatehouse.ts';
import { startServe } from './helpers/serve-process.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';

// The outbox is durable: a sidecar killed with SIGKILL in the middle of retrying picks the
// deliveries up again when it restarts on the same data directory, and every event arrives, once,
// in order.

// Compiling the bundled policies can take a while on a cold cache.
t.setTimeout(600_000);

t.test('pending deliveries survive SIGKILL and complete after a restart', async (t) => {
  const dataDir = tempDir(t);
  const adminKey = 'webhook-durability-admin-key-0123456789';
  const args = ['--data-dir', dataDir, '--webhook-allow', '127.0.0.1', '--webhook-retry-schedule', Array(10).fill('250ms').join(',')];
  let healthy = false;
  const receiver = await startReceiver(t, () => (healthy ? 200 : 500));

  const first = await startServe(args, { GATEHOUSE_ADMIN_KEY: adminKey });
  t.teardown(() => first.child.kill('SIGKILL'));
  const key = await issueKey(first.url, adminKey, { env: 'sandbox', scopes: ['webhooks:manage', 'decisions:write'] });
  const endpoint = await call(first.url, 'POST', '/v1/webhooks/config', { key: key.key, body: { url: receiver.url, events: ['decision.created'] } });
  t.equal(endpoint.status, 201, endpoint.text);
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const answer = await call(first.url, 'POST', '/v1/decisions', {
      key: key.key,
      body: { title: `durable ${i}`, policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: i }] },
    });
    t.equal(answer.status, 200, answer.text);
    ids.push(answer.json.id);
  }
  await receiver.waitFor((r) => r.length >= 2);
  first.child.kill('SIGKILL');
  t.equal((await first.exited).signal, 'SIGKILL', 'killed while retrying');
  const failedBeforeKill = receiver.received.length;
  t.ok(receiver.received.every((r) => r.status === 500), `${failedBeforeKill} attempts failed before the kill`);

  healthy = true;
  const second = await startServe(args, { GATEHOUSE_ADMIN_KEY: adminKey });
  t.teardown(() => second.child.kill('SIGKILL'));
  await receiver.waitFor((r) => r.filter((x) => x.status === 200).length === 3, 60_000);
  const delivered = receiver.received.filter((r) => r.status === 200);
  t.same(delivered.map((r) => JSON.parse(r.body).data.id), ids, 'every event, in order, after the restart');
  t.equal(new Set(delivered.map((r) => r.headers['webhook-id'])).size, 3, 'each once');
  t.ok(receiver.received.slice(0, failedBeforeKill).every((r) => JSON.parse(r.body).data.id === ids[0]), 'the retries were of the first event');
  second.child.kill('SIGTERM');
  t.equal((await second.exited).code, 0, 'and it still shuts down cleanly');
});
