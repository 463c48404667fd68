import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import t from 'tap';
import { startTestServer, tempDir } from './helpers/gatehouse.ts';
import { OPEN_ACCESS, routePolicies, routesFile, startUpstream } from './helpers/upstream.ts';

// A 10 MiB body goes through the gateway both ways without being buffered: the upstream starts
// receiving before the client has finished sending, and the client starts receiving the answer
// before the upstream has finished sending it.

t.setTimeout(600_000);
const engine = await routePolicies(t, {}, OPEN_ACCESS);
t.teardown(() => engine.close());

const SIZE = 10 * 1024 * 1024;
const CHUNK = 64 * 1024;

t.test('10 MiB streamed both ways, byte for byte', async (t) => {
  const payload = randomBytes(SIZE);
  const digest = createHash('sha256').update(payload).digest('hex');
  const events: string[] = [];
  let clientDone = false;
  let upstreamFirstByteBeforeClientDone: boolean | null = null;
  let upstreamDigest = '';
  let finishUpstream: () => void = () => {};
  const upstreamMayFinish = new Promise<void>((resolve) => (finishUpstream = resolve));

  const upstream = await startUpstream(t, (req, res) => {
    const hash = createHash('sha256');
    req.on('data', (chunk: Buffer) => {
      if (upstreamFirstByteBeforeClientDone === null) upstreamFirstByteBeforeClientDone = !clientDone;
      hash.update(chunk);
    });
    req.on('end', async () => {
      upstreamDigest = hash.digest('hex');
      // Answer with the same bytes, the second half only once the client has seen the first.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.write(payload.subarray(0, SIZE / 2));
      events.push('upstream sent half');
      await upstreamMayFinish;
      res.end(payload.subarray(SIZE / 2));
    });
  });
  const file = routesFile(tempDir(t), [{ name: 'bulk', match: { pathPrefix: '/' }, upstream: upstream.url, policy: 'open-access-v1', auth: 'none' }]);
  const { server } = await startTestServer(t, { policies: engine, proxy: { routesFile: file, port: 0 } });
  const { port } = new URL(server.gateway!.url);

  const answer = await new Promise<{ status: number; digest: string; length: number }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'PUT', path: '/upload', headers: { 'content-type': 'application/octet-stream' }, signal: AbortSignal.timeout(60_000) }, (res) => {
      const hash = createHash('sha256');
      let length = 0;
      res.on('data', (chunk: Buffer) => {
        if (length === 0) events.push('client received');
        hash.update(chunk);
        length += chunk.length;
        // The first half arrived while the upstream still holds the second back: nothing waits
        // for the whole answer.
        if (length >= SIZE / 2) finishUpstream();
      });
      res.on('end', () => resolve({ status: res.statusCode!, digest: hash.digest('hex'), length }));
      res.on('error', reject);
    });
    req.on('error', reject);
    // Chunked (no Content-Length), written with backpressure.
    let offset = 0;
    const pump = () => {
      while (offset < SIZE) {
        const more = req.write(payload.subarray(offset, offset + CHUNK));
        offset += CHUNK;
        if (!more) {
          req.once('drain', pump);
          return;
        }
      }
      clientDone = true;
      req.end();
    };
    pump();
  });

  t.equal(answer.status, 200);
  t.equal(upstreamDigest, digest, 'the upstream received the body intact');
  t.equal(answer.length, SIZE);
  t.equal(answer.digest, digest, 'the client received the answer intact');
  t.equal(upstreamFirstByteBeforeClientDone, true, 'the upstream was receiving before the client finished sending');
  t.same(events.slice(0, 2), ['upstream sent half', 'client received'], 'the answer streamed back before the upstream finished it');
});
