/**
 * The stream benchmark's far side, run as a child process (bench/scenarios/stream.ts) so that
 * receiving does not share the sidecar's event loop: many `ws` subscribers on `decisions`, and a
 * webhook receiver. Every decision the scenario creates carries, in its title, the wall-clock
 * time its POST was sent (µs, `performance.timeOrigin + performance.now()`, comparable across
 * processes on one machine); each receipt records now minus that into an HDR histogram.
 *
 * Protocol over IPC: {subscribe,url,key,count} → {ready}; {collect,expected,timeoutMs} →
 * {stream,…} (and a fresh histogram); {disconnect} → {disconnected}; {receiver} → {receiver,url};
 * {collectWebhooks,expected,timeoutMs} → {webhooks,…}; {close}.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { createHistogram, encodeHistogram, type Histogram } from './histogram.ts';

const nowUs = () => Math.round((performance.timeOrigin + performance.now()) * 1000);
/** An event message as the stream (and the baseline publisher) serialise it, and a measured decision's send time in it. */
const EVENT_PREFIX = '{"type":"event",';
const RECEIPT = /"kind":"decision\.created".*?"title":"bench (\d+)"/;
const sentAt = (title: string): number | null => {
  const match = /^bench (\d+)$/.exec(title);
  return match ? Number(match[1]) : null;
};

let sockets: WebSocket[] = [];
let streamLatency: Histogram = createHistogram();
let streamReceived = 0;
const webhookLatency = createHistogram();
let webhookReceived = 0;
let webhookFirstUs = 0;
let webhookLastUs = 0;

function connect(url: string, key: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/streaming`, { headers: { authorization: `Bearer ${key}` } });
    ws.once('error', reject);
    ws.once('open', () => ws.send(JSON.stringify({ type: 'subscribe', topics: ['decisions'] })));
    ws.on('message', (data) => {
      const text = data.toString();
      // One process receives every subscriber's copy in turn, so a receipt is read without
      // parsing the whole event: the later copies of a burst would otherwise wait on the parses.
      if (text.startsWith(EVENT_PREFIX)) {
        const sent = RECEIPT.exec(text);
        if (!sent) return;
        streamLatency.recordValue(Math.max(1, nowUs() - Number(sent[1])));
        streamReceived++;
        return;
      }
      const message = JSON.parse(text) as { type: string };
      if (message.type === 'subscribed') resolve(ws);
      if (message.type === 'error') reject(new Error(`subscribing failed: ${text}`));
    });
  });
}

async function subscribe(url: string, key: string, count: number): Promise<void> {
  // In batches: a thousand simultaneous upgrades would only measure the accept queue.
  for (let i = 0; i < count; i += 100) {
    sockets.push(...(await Promise.all(Array.from({ length: Math.min(100, count - i) }, () => connect(url, key)))));
  }
}

function startReceiver(): Promise<string> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(204).end();
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { data?: { title?: string } };
      const sent = sentAt(body.data?.title ?? '');
      if (sent === null) return;
      const now = nowUs();
      webhookLatency.recordValue(Math.max(1, now - sent));
      webhookReceived++;
      webhookFirstUs ||= now;
      webhookLastUs = now;
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`)));
}

async function waitFor(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

type Command =
  | { type: 'subscribe'; url: string; key: string; count: number }
  | { type: 'collect'; expected: number; timeoutMs: number }
  | { type: 'disconnect' }
  | { type: 'receiver' }
  | { type: 'collectWebhooks'; expected: number; timeoutMs: number }
  | { type: 'close' };

process.on('message', (command: Command) => {
  void (async () => {
    switch (command.type) {
      case 'subscribe':
        await subscribe(command.url, command.key, command.count);
        process.send!({ type: 'ready' });
        return;
      case 'collect':
        // Events still in flight when the generator stops are waited for, with a bound.
        await waitFor(() => streamReceived >= command.expected, command.timeoutMs);
        process.send!({ type: 'stream', histogram: encodeHistogram(streamLatency), received: streamReceived });
        streamLatency = createHistogram();
        streamReceived = 0;
        return;
      case 'disconnect':
        for (const ws of sockets) ws.terminate();
        sockets = [];
        process.send!({ type: 'disconnected' });
        return;
      case 'receiver':
        process.send!({ type: 'receiver', url: await startReceiver() });
        return;
      case 'collectWebhooks':
        await waitFor(() => webhookReceived >= command.expected, command.timeoutMs);
        process.send!({ type: 'webhooks', histogram: encodeHistogram(webhookLatency), received: webhookReceived, spanMs: (webhookLastUs - webhookFirstUs) / 1000 });
        return;
      case 'close':
        process.exit(0);
    }
  })();
});
