import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { consoleRoutes } from '../proxy/console/console-routes.ts';
import { ROUTES } from '../proxy/route-table.ts';
import { GatehouseClient, verifyWebhook, WebhookVerificationError, type StreamEvent, type WebSocketConstructor } from '../proxy/client/index.ts';
import { bundledEngine } from './helpers/policies.ts';
import { startTestServer } from './helpers/gatehouse.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';

t.setTimeout(600_000);

t.test('every operation the server has is a client method named by its operationId', async (t) => {
  // The console's page, its files and the redirect to it are for browsers, not API callers.
  const operations = ROUTES.filter((route) => !consoleRoutes.includes(route)).map((route) => route.operationId);
  const missing = operations.filter((id) => typeof (GatehouseClient.prototype as unknown as Record<string, unknown>)[id] !== 'function');
  t.same(missing, [], 'add a method to proxy/client/gatehouse-client.ts for each');
  t.ok(operations.length >= 50);
});

const engine = await bundledEngine();
t.teardown(() => engine.close());

async function setup(t: Test) {
  const server = await startTestServer(t, {
    policies: engine,
    webhooks: { allow: ['127.0.0.1'], retryScheduleMs: [50], attemptTimeoutMs: 2_000, pollMs: 50 },
  });
  const operator = new GatehouseClient({ baseUrl: server.url, apiKey: server.admin, signer: server.adminSigner });
  const issued = await operator.createKey({
    env: 'sandbox',
    scopes: ['decisions:read', 'decisions:write', 'decisions:approve', 'decisions:execute', 'memory:read', 'memory:write', 'stream:subscribe', 'webhooks:manage', 'impact:read'],
  });
  return { url: server.url, operator, client: new GatehouseClient({ baseUrl: server.url, apiKey: issued.key }), key: issued.key };
}

t.test('memory, objectives, counts and the paged memory iterator', async (t) => {
  const { client } = await setup(t);
  const written = await client.writeMemory({ namespace: 'finance', key: 'budget_q3', text: 'The Q3 budget is 1.2M.' });
  t.equal(written.version, 1);
  for (let i = 0; i < 4; i++) await client.writeMemory({ namespace: 'notes', text: `note ${i}` });
  t.equal((await client.getMemory('finance:budget_q3')).id, written.id, 'by namespace:key');
  t.equal((await client.listMemoryVersions(written.id)).versions.length, 1);
  const notes: string[] = [];
  for await (const item of client.memoryItems({ namespace: 'notes', limit: 3 })) notes.push(item.text);
  t.same(notes, ['note 0', 'note 1', 'note 2', 'note 3'], 'the iterator follows cursors');
  t.equal((await client.deleteMemory(written.id)).tombstone, true);

  const objective = await client.createObjective({ title: 'Keep spend in budget', key: 'spend' });
  const decision = await client.createDecision({ title: 'Buy', policy: 'decision-gate-v1', context: 'routine' });
  const linked = await client.linkObjectiveDecision(objective.id, { decisionId: decision.id });
  t.same(linked.decisions.map((d) => d.decisionId), [decision.id]);
  t.equal((await client.listObjectives()).length, 1);
  t.equal((await client.countDecisions({ status: 'created' })).total, 1);
});

t.test('webhook endpoints, and verifying a delivery with the Standard Webhooks helper', async (t) => {
  const { client } = await setup(t);
  const receiver = await startReceiver(t);
  const endpoint = await client.createWebhook({ url: `${receiver.url}/hook`, events: ['decision.*'] });
  t.match(endpoint.secret, /^whsec_/);
  t.equal((await client.listWebhooks()).length, 1);
  t.equal((await client.updateWebhook(endpoint.id, { description: 'ops' })).description, 'ops');
  await client.testWebhook(endpoint.id);
  await client.createDecision({ title: 'Ship', policy: 'decision-gate-v1', context: 'routine' });
  await receiver.waitFor((received) => received.length >= 2);
  const [test, created] = receiver.received.map(({ headers, body }) => verifyWebhook(endpoint.secret, body, headers as Record<string, string>));
  t.equal(test!.type, 'webhook.test');
  t.match(created, { type: 'decision.created', data: { title: 'Ship' }, topic: /^decisions\// });
  const { headers, body } = receiver.received[1]!;
  t.throws(() => verifyWebhook(endpoint.secret, body.replace('Ship', 'Skip'), headers as Record<string, string>), WebhookVerificationError, 'a changed body is refused');
  const rotated = await client.rotateWebhookSecret(endpoint.id, { graceSeconds: 0 });
  t.throws(() => verifyWebhook(rotated.secret, body, headers as Record<string, string>), WebhookVerificationError, 'another secret is refused');
  t.equal(verifyWebhook([rotated.secret, endpoint.secret], body, headers as Record<string, string>).type, 'decision.created', 'any of the secrets held');

  const deliveries = [];
  for await (const delivery of client.webhookDeliveries(endpoint.id, { limit: 1 })) deliveries.push(delivery);
  t.equal(deliveries.length, 2, 'the iterator follows cursors');
  t.equal((await client.replayWebhookDelivery(endpoint.id, deliveries[0]!.id)).messageId, deliveries[0]!.messageId);
  t.equal((await client.deleteWebhook(endpoint.id)).id, endpoint.id);
});

t.test('the stream helper resumes from its cursor after the connection drops', async (t) => {
  const { client } = await setup(t);
  const sockets: WebSocket[] = [];
  const sent: string[] = [];
  // `ws`, recording each socket and what it sends, so the test can cut one.
  const Recording = class extends WebSocket {
    constructor(url: string, init?: { headers: Record<string, string> }) {
      super(url, init);
      sockets.push(this);
    }
    override send(data: string) {
      sent.push(data);
      super.send(data);
    }
  } as unknown as WebSocketConstructor;
  const controller = new AbortController();
  // From cursor 0, so an event committed before the subscription takes effect is still sent.
  const events = client.stream({ topics: ['decisions'], since: 0, WebSocket: Recording, reconnectDelayMs: 20, signal: controller.signal });
  const seen: StreamEvent[] = [];
  const first = events.next();
  const a = await client.createDecision({ title: 'A', policy: 'decision-gate-v1', context: 'routine' });
  seen.push((await first).value as StreamEvent);
  sockets[0]!.terminate();
  const b = await client.createDecision({ title: 'B', policy: 'decision-gate-v1', context: 'routine' });
  await client.cancelDecision(b.id);
  for (let i = 0; i < 2; i++) seen.push((await events.next()).value as StreamEvent);
  controller.abort();
  t.equal((await events.next()).done, true, 'aborting ends the iteration');
  t.same(
    seen.map((e) => [e.kind, (e.data as { id: string }).id]),
    [
      ['decision.created', a.id],
      ['decision.created', b.id],
      ['decision.cancelled', b.id],
    ],
    'nothing missed across the reconnect, nothing twice',
  );
  t.equal(sockets.length, 2, 'it reconnected once');
  // What the first connection had sent: its last event, or the later cursor its `subscribed` reported.
  const resumed = JSON.parse(sent[1]!);
  t.match(resumed, { type: 'subscribe', topics: ['decisions'] });
  t.ok(resumed.since >= seen[0]!.cursor && resumed.since < seen[1]!.cursor, 'from the last cursor it saw');
});
