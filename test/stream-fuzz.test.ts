import t from 'tap';
import WebSocket from 'ws';
import { hostileString, hostileValue, mutateBody, Rng } from './helpers/fuzz.ts';
import { call, issueKey, startTestServer } from './helpers/gatehouse.ts';
import { bundledEngine } from './helpers/policies.ts';
import { openStream } from './helpers/stream-client.ts';

// WS /v1/streaming's client messages, fuzzed from one seed (FUZZ_SEED replays a run): mutated
// subscribe and unsubscribe messages, text that is not JSON, binary frames and oversized ones.
// Every message the server takes is answered (a reply or an `error` with a code and a message),
// a connection is closed only with a close code, and afterwards the server still streams.

const SEED = Number(process.env.FUZZ_SEED ?? 20_2026);
const MESSAGES = Number(process.env.FUZZ_STREAM_MESSAGES ?? 400);
const engine = await bundledEngine();
t.teardown(() => engine.close());

const SEEDS: unknown[] = [
  { type: 'subscribe', topics: ['decisions'] },
  { type: 'subscribe', topics: ['decisions', 'audit'], since: 0 },
  { type: 'unsubscribe', topics: ['decisions'] },
];

function hostileMessage(rng: Rng): string | Buffer {
  switch (rng.int(6)) {
    case 0:
      return Buffer.from(Array.from({ length: rng.int(64) }, () => rng.int(256)));
    case 1:
      return hostileString(rng);
    case 2:
      return JSON.stringify(hostileValue(rng));
    default:
      return mutateBody(rng, rng.pick(SEEDS));
  }
}

t.test('fuzzing the stream protocol', async (t) => {
  const { url, admin } = await startTestServer(t, { policies: engine });
  const reader = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read', 'decisions:write', 'stream:subscribe'] });
  const rng = new Rng(SEED);
  let connection = await openStream(t, url, reader.key);
  let answered = 0;
  let closes = 0;
  for (let i = 0; i < MESSAGES; i++) {
    const message = hostileMessage(rng);
    const before = connection.messages.length;
    if (typeof message === 'string') connection.send(message);
    else connection.ws.send(message, { binary: true });
    // Each message gets its answer before the next is sent, or the connection closes.
    const outcome = await Promise.race([
      connection.next((m) => m.type === 'error' || m.type === 'subscribed' || m.type === 'unsubscribed', 5000, before).then((m) => m),
      connection.closed.then((closed) => closed),
    ]).catch((error: Error) => error);
    if (outcome instanceof Error) {
      t.fail(`message ${i} (${JSON.stringify(String(message).slice(0, 80))}) got no answer: ${outcome.message}`);
      break;
    }
    if ('code' in outcome && typeof outcome.code === 'number') {
      closes++;
      t.ok(outcome.code >= 1000, `message ${i}: closed with a close code (${outcome.code})`);
      connection = await openStream(t, url, reader.key);
      continue;
    }
    answered++;
    const reply = outcome as { type: string; code?: string; message?: string };
    if (reply.type === 'error') t.ok(typeof reply.code === 'string' && typeof reply.message === 'string' && reply.message.length > 0, `message ${i}: the error says what is wrong`);
  }
  t.ok(answered > MESSAGES / 2, `most messages were answered on their connection (${answered}, ${closes} closes)`);

  const healthy = await openStream(t, url, reader.key);
  healthy.send({ type: 'subscribe', topics: ['decisions'] });
  await healthy.next((m) => m.type === 'subscribed');
  const created = await call(url, 'POST', '/v1/decisions', { key: reader.key, body: { title: 'after the fuzz', policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 10 }] } });
  t.equal(created.status, 200);
  await healthy.next((m) => m.type === 'event' && m.data?.id === created.json.id);
  t.pass('the server still streams');
});

t.test('a frame beyond the stream limit closes only its own connection', async (t) => {
  const { url, admin } = await startTestServer(t, { policies: engine });
  const reader = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read', 'stream:subscribe'] });
  const big = await openStream(t, url, reader.key);
  const other = await openStream(t, url, reader.key);
  big.ws.send('x'.repeat(4 * 1024 * 1024));
  const closed = await big.closed;
  t.ok(closed.code >= 1000, `closed with ${closed.code}`);
  t.equal(other.ws.readyState, WebSocket.OPEN, 'the other subscriber is unaffected');
  other.send({ type: 'subscribe', topics: ['decisions'] });
  await other.next((m) => m.type === 'subscribed');
});
