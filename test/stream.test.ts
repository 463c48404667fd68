import t, { type Test } from 'tap';
import { bundledEngine } from './helpers/policies.ts';
import { call, issueKey, startTestServer } from './helpers/gatehouse.ts';
import { openStream, type StreamClient, type StreamMessage } from './helpers/stream-client.ts';

// WS /v1/streaming against a real server and a real `ws` client: authentication on the upgrade,
// topics and environments, resuming from a cursor with nothing missed and nothing twice, bad
// messages, and a subscriber that stops reading.

t.setTimeout(600_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

const READER = ['decisions:read', 'decisions:write', 'stream:subscribe'];

async function setup(t: Test, streaming = {}) {
  const { url, admin } = await startTestServer(t, { policies: engine, streaming });
  const reader = await issueKey(url, admin, { env: 'sandbox', scopes: READER });
  const create = async (score: number, context?: string) => {
    const answer = await call(url, 'POST', '/v1/decisions', {
      key: reader.key,
      body: { title: `risk ${score}`, policy: 'decision-gate-v1', context: context ?? [{ source: 'risk:score', value: score }] },
    });
    if (answer.status !== 200) throw new Error(`create failed: ${answer.status} ${answer.text}`);
    return answer.json as { id: string };
  };
  return { url, admin, reader, create };
}

const events = (client: StreamClient, from = 0) => client.messages.slice(from).filter((m) => m.type === 'event');
const created = (id: string) => (m: StreamMessage) => m.type === 'event' && m.kind === 'decision.created' && m.data.id === id;

t.test('the upgrade is authenticated and audited like any call', async (t) => {
  const { url, admin } = await setup(t);
  const auditor = await issueKey(url, admin, { env: 'sandbox', scopes: ['admin'] });
  const noScope = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });

  await t.rejects(openStream(t, url, null), { message: 'upgrade refused: 401' }, 'no key: 401 before upgrading');
  await t.rejects(openStream(t, url, 'gh_test_unknown'), { message: 'upgrade refused: 401' }, 'unknown key: 401');
  const watcher = await openStream(t, url, auditor.key);
  watcher.send({ type: 'subscribe', topics: ['audit'] });
  await watcher.next((m) => m.type === 'subscribed');
  await t.rejects(openStream(t, url, noScope.key), { message: 'upgrade refused: 403' }, 'no stream:subscribe scope: 403');
  const refusal = await watcher.next((m) => m.kind === 'audit.appended' && m.data.route === '/v1/streaming');
  t.match(refusal.data, { status: 403, code: 'insufficient_scope', keyId: noScope.id }, 'the refused upgrade is in the audit log');

  const plain = await call(url, 'GET', '/v1/streaming', { key: auditor.key });
  t.equal(plain.status, 400, 'a plain GET is told to upgrade');
  t.match(plain.json.detail, /upgrade/);

  const opened = await openStream(t, url, auditor.key);
  const upgrade = await watcher.next((m) => m.kind === 'audit.appended' && m.data.route === '/v1/streaming' && m.data.status === 101);
  t.equal(upgrade.data.keyId, auditor.id, 'the upgrade itself is audited');
  await opened.close();
});

t.test('a subscriber that drops and resumes with its cursor gets exactly what it missed, then live events', async (t) => {
  const { url, reader, create } = await setup(t);
  const first = await openStream(t, url, reader.key);
  first.send({ type: 'subscribe', topics: ['decisions'] });
  const ack = await first.next((m) => m.type === 'subscribed');
  t.same(ack.topics, ['decisions']);
  const a = await create(10);
  const seen = await first.next(created(a.id));
  t.match(seen, { type: 'event', cursor: Number, id: /^evt_/, kind: 'decision.created', topic: `decisions/${a.id}`, time: String });
  t.match(seen.data, { id: a.id, status: 'created', gate: 'auto' });
  await first.close();

  const missed = [await create(20), await create(30), await create(40)];
  const second = await openStream(t, url, reader.key);
  second.send({ type: 'subscribe', topics: ['decisions'], since: seen.cursor });
  const resumed = await second.next((m) => m.type === 'subscribed');
  const replayed = events(second);
  t.same(replayed.map((m) => m.data.id), missed.map((d) => d.id), 'exactly the missed events, in order');
  t.equal(resumed.replayed, 3);
  t.ok(replayed.every((m, i) => i === 0 || m.cursor > replayed[i - 1]!.cursor), 'cursors increase');

  const live = await create(50);
  await second.next(created(live.id));
  const all = events(second);
  t.same(all.map((m) => m.data.id), [...missed, live].map((d) => d.id), 'then live, with no duplicate');
  t.equal(new Set(all.map((m) => m.cursor)).size, all.length, 'no cursor twice');
  t.ok(all.every((m) => m.topic.startsWith('decisions/')), 'only the subscribed topic');
});

t.test('resuming while events are being committed loses and repeats nothing', async (t) => {
  const { url, reader, create } = await setup(t);
  const before = await create(10);
  const watcher = await openStream(t, url, reader.key);
  watcher.send({ type: 'subscribe', topics: ['decisions'] });
  const start = await watcher.next((m) => m.type === 'subscribed');
  t.ok(start.cursor > 0, 'the acknowledgement carries the current cursor');
  const writing = Promise.all(Array.from({ length: 30 }, (_, i) => create(i)));
  const resumer = await openStream(t, url, reader.key);
  resumer.send({ type: 'subscribe', topics: ['decisions'], since: start.cursor });
  const ids = (await writing).map((d) => d.id);
  for (const id of ids) await resumer.next(created(id));
  const got = events(resumer).map((m) => m.data.id);
  t.equal(got.length, ids.length, 'every event once');
  t.same([...got].sort(), [...ids].sort(), 'the same events the writers created');
  t.notOk(got.includes(before.id), 'nothing from before the cursor');
  const cursors = events(resumer).map((m) => m.cursor);
  t.same(cursors, [...cursors].sort((x, y) => x - y), 'in cursor order');
});

t.test('events committed while no stream is open are replayed from the log, then the stream goes on live', async (t) => {
  const { url, reader, create } = await setup(t);
  const first = await create(1);
  const second = await create(2);
  const client = await openStream(t, url, reader.key);
  client.send({ type: 'subscribe', topics: ['decisions'], since: 0 });
  await client.next((m) => m.type === 'subscribed');
  const third = await create(3);
  await client.next(created(third.id));
  const seen = events(client).filter((m) => m.kind === 'decision.created');
  t.same(
    seen.map((m) => m.data.id),
    [first.id, second.id, third.id],
    'the two from before any connection, then the live one, each once',
  );
  t.same(seen.map((m) => m.cursor), [...seen.map((m) => m.cursor)].sort((x, y) => x - y), 'in cursor order');
});

t.test('topics follow the key\'s scopes and environment', async (t) => {
  const { url, admin, reader, create } = await setup(t);
  const client = await openStream(t, url, reader.key);
  client.send({ type: 'subscribe', topics: ['keys'] });
  t.match(await client.next((m) => m.type === 'error'), { code: 'insufficient_scope', message: /admin/ });
  client.send({ type: 'subscribe', topics: ['nonsense'] });
  t.match(await client.next((m) => m.type === 'error' && m.code === 'unknown_topic'), { message: /no topic nonsense/ });

  const one = await create(10);
  const other = await create(11);
  client.send({ type: 'subscribe', topics: [`decisions/${one.id}`], since: 0 });
  await client.next((m) => m.type === 'subscribed');
  t.same(events(client).map((m) => m.kind), ['decision.created'], 'one decision\'s topic replays that decision only');
  t.equal(events(client)[0]!.data.id, one.id);
  client.send({ type: 'subscribe', topics: ['decisions'] });
  const both = await client.next((m) => m.type === 'subscribed' && m.topics[0] === 'decisions');
  const act = await call(url, 'POST', `/v1/decisions/${one.id}/cancel`, { key: reader.key });
  t.equal(act.status, 200);
  await client.next((m) => m.kind === 'decision.cancelled');
  t.equal(events(client).filter((m) => m.kind === 'decision.cancelled').length, 1, 'covered by two subscriptions, delivered once');
  t.notOk(events(client).some((m) => m.data.id === other.id), 'subscribing without since does not replay');
  t.ok(both.cursor >= events(client)[0]!.cursor);

  // Environments: a sandbox admin sees sandbox keys only, even with a production key issued first.
  const sandboxAdmin = await issueKey(url, admin, { env: 'sandbox', scopes: ['admin'] });
  const keysWatcher = await openStream(t, url, sandboxAdmin.key);
  keysWatcher.send({ type: 'subscribe', topics: ['keys'] });
  await keysWatcher.next((m) => m.type === 'subscribed');
  const production = await issueKey(url, admin, { env: 'production', scopes: ['decisions:read'] });
  const sandbox = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  const seen = await keysWatcher.next((m) => m.type === 'event');
  t.match(seen, { kind: 'key.created', topic: `keys/${sandbox.id}` }, 'the first key event seen is the sandbox one');
  t.notOk(keysWatcher.messages.some((m) => m.data?.id === production.id), 'the production key is not visible');
  t.notOk('hash' in seen.data, 'no key hash in events');
  keysWatcher.send({ type: 'subscribe', topics: ['keys/x'], since: 0 });
  await keysWatcher.next((m) => m.type === 'subscribed' && m.topics[0] === 'keys/x');
  const replayedIds = keysWatcher.messages.filter((m) => m.type === 'event').map((m) => m.data.id);
  t.notOk(replayedIds.includes(production.id), 'nor in a replay from the beginning');
});

t.test('bad client messages get an error and the connection stays usable', async (t) => {
  const { url, reader, create } = await setup(t);
  const client = await openStream(t, url, reader.key);
  const errors = () => client.messages.filter((m) => m.type === 'error');
  client.send('not json');
  t.match(await client.next((m) => m.type === 'error'), { code: 'invalid_message', message: /not valid JSON/ });
  client.send({ type: 'subscribe' });
  client.send({ type: 'dance', topics: ['decisions'] });
  client.send({ type: 'subscribe', topics: ['decisions'], since: -1 });
  client.ws.send(Buffer.from([1, 2, 3]), { binary: true });
  client.send({ type: 'subscribe', topics: ['decisions'], since: 10_000_000 });
  await client.next((m) => m.type === 'error' && m.code === 'invalid_cursor');
  t.same(errors().map((m) => m.code), ['invalid_message', 'invalid_message', 'invalid_message', 'invalid_message', 'invalid_message', 'invalid_cursor']);
  t.ok(errors().every((m) => typeof m.message === 'string' && m.message.length > 0), 'each says what is wrong');
  client.send({ type: 'subscribe', topics: ['decisions'] });
  await client.next((m) => m.type === 'subscribed');
  const d = await create(10);
  await client.next(created(d.id));
  client.send({ type: 'unsubscribe', topics: ['decisions'] });
  await client.next((m) => m.type === 'unsubscribed');
  const after = client.messages.length;
  const quiet = await create(11);
  const marker = await openStream(t, url, reader.key);
  marker.send({ type: 'subscribe', topics: ['decisions'], since: 0 });
  await marker.next(created(quiet.id));
  t.notOk(client.messages.slice(after).some((m) => m.type === 'event'), 'no events after unsubscribing');
});

t.test('a subscriber that stops reading is closed with 4008 instead of buffering', async (t) => {
  const { url, reader, create } = await setup(t, { maxBackpressureBytes: 64 * 1024 });
  const slow = await openStream(t, url, reader.key);
  slow.send({ type: 'subscribe', topics: ['decisions'] });
  await slow.next((m) => m.type === 'subscribed');
  (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
  // Each event carries the decision and its 60 KB context; once the kernel's socket buffers are
  // full (a few MB), the server's own buffer passes the bound and the server closes the stream.
  const big = 'x'.repeat(60_000);
  const connections = async () => Number(/gatehouse_stream_connections (\d+)/.exec((await call(url, 'GET', '/metrics')).text)?.[1]);
  const healthy = await openStream(t, url, reader.key);
  healthy.send({ type: 'subscribe', topics: ['decisions'] });
  await healthy.next((m) => m.type === 'subscribed');
  let sent = 0;
  while (sent < 400) {
    await create(sent, big);
    sent++;
    if (/gatehouse_stream_slow_consumers_total 1/.test((await call(url, 'GET', '/metrics')).text)) break;
  }
  (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
  const { code, reason } = await slow.closed;
  t.equal(code, 4008, `closed with 4008 after ${sent} large events`);
  t.match(reason, /slow consumer/);
  const received = events(slow).map((m) => m.data.title);
  t.same(received, Array.from({ length: received.length }, (_, i) => `risk ${i}`), `what it got before the close (${received.length} of ${sent}) has no gap`);
  t.equal(await connections(), 1, 'the server let go of it; the healthy one stays');
  await healthy.next((m) => m.type === 'event' && m.data.title === `risk ${sent - 1}`, 30_000);
  t.equal(events(healthy).length, sent, 'a subscriber that reads keeps receiving everything');
});

