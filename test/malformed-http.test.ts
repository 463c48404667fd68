import { connect } from 'node:net';
import t from 'tap';
import { call, startTestServer, tempDir } from './helpers/gatehouse.ts';
import { routesFile } from './helpers/upstream.ts';

// Malformed HTTP over raw sockets, on the /v1 API (uWebSockets.js) and on the proxy gateway
// (node:http). docs/security.md, "Malformed HTTP", says what each answers and why.

t.setTimeout(120_000);

interface Outcome {
  /** Everything the server sent. */
  data: string;
  /** The server closed the connection before the bound. */
  closed: boolean;
  status: number | null;
  body: any;
}

/** Sends `request` as raw bytes; waits until the server closes the connection, `boundMs` at most. */
function exchange(url: string, request: string, boundMs: number): Promise<Outcome> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let data = '';
    const done = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(data)?.[1];
      // The document alone, whether the body is framed by Content-Length or chunked.
      const text = data.slice(data.indexOf('\r\n\r\n') + 4);
      let body: unknown;
      try {
        body = JSON.parse(text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1));
      } catch {
        body = undefined;
      }
      resolve({ data, closed, status: status ? Number(status) : null, body });
    };
    const timer = setTimeout(() => done(false), boundMs);
    socket.on('data', (chunk) => (data += chunk.toString('latin1')));
    socket.on('close', () => done(true));
    socket.on('error', () => {});
    socket.write(Buffer.from(request, 'latin1'));
  });
}

const head = (lines: string[], body = '') => `${lines.join('\r\n')}\r\n\r\n${body}`;

const dir = tempDir(t);
const routes = routesFile(dir, [{ name: 'orders', match: { pathPrefix: '/api' }, upstream: 'http://127.0.0.1:9', policy: 'route-access-v1', auth: 'api-key' }]);
const { url, server } = await startTestServer(t, { proxy: { routesFile: routes, port: 0 } });
const gateway = server.gateway!.url;

t.test('/v1: a malformed head uWS lets through is 400 problem+json, and the connection closes', async (t) => {
  const cases: Record<string, { request: string; detail: RegExp }> = {
    'Content-Length twice, different': {
      request: head(['POST /v1/decisions HTTP/1.1', 'Host: a', 'Content-Type: application/json', 'Content-Length: 2', 'Content-Length: 3'], '{}x'),
      detail: /Content-Length must be sent once/,
    },
    'Content-Length twice, equal': {
      request: head(['POST /v1/decisions HTTP/1.1', 'Host: a', 'Content-Type: application/json', 'Content-Length: 2', 'Content-Length: 2'], '{}'),
      detail: /Content-Length must be sent once/,
    },
    'a transfer coding besides chunked': {
      request: head(['POST /v1/decisions HTTP/1.1', 'Host: a', 'Transfer-Encoding: gzip, chunked'], '2\r\n{}\r\n0\r\n\r\n'),
      detail: /Transfer-Encoding must be sent once, as chunked alone/,
    },
    'Transfer-Encoding twice': {
      request: head(['POST /v1/decisions HTTP/1.1', 'Host: a', 'Transfer-Encoding: chunked', 'Transfer-Encoding: chunked'], '2\r\n{}\r\n0\r\n\r\n'),
      detail: /Transfer-Encoding must be sent once/,
    },
    'Host twice': { request: head(['GET /v1/decisions HTTP/1.1', 'Host: a', 'Host: b']), detail: /Host must be sent once/ },
    'DEL in a field value': { request: head(['GET /v1/decisions HTTP/1.1', 'Host: a', 'X-Note: a\x7fb']), detail: /the x-note field holds a control character/ },
  };
  await Promise.all(
    Object.entries(cases).map(async ([name, { request, detail }]) => {
      const outcome = await exchange(url, request, 10_000);
      t.equal(outcome.status, 400, `${name}: 400`);
      t.match(outcome.data, /content-type: application\/problem\+json/i, `${name}: problem+json`);
      t.match(outcome.body, { status: 400, code: 'invalid_request', detail }, `${name}: says what is wrong`);
      t.ok(outcome.closed, `${name}: the connection is closed`);
    }),
  );
});

t.test('/v1: what uWS drops at once, without a status', async (t) => {
  const cases: Record<string, string> = {
    'an unknown method': head(['BREW /v1/decisions HTTP/1.1', 'Host: a']),
    'a lower-case method': head(['get /v1/decisions HTTP/1.1', 'Host: a']),
    'a Content-Length that is not a number': head(['POST /v1/decisions HTTP/1.1', 'Host: a', 'Content-Length: abc'], '{}'),
    'a negative Content-Length': head(['POST /v1/decisions HTTP/1.1', 'Host: a', 'Content-Length: -1'], '{}'),
    'Content-Length with Transfer-Encoding': head(['POST /v1/decisions HTTP/1.1', 'Host: a', 'Content-Length: 2', 'Transfer-Encoding: chunked'], '0\r\n\r\n'),
    'a malformed chunk': head(['POST /v1/decisions HTTP/1.1', 'Host: a', 'Transfer-Encoding: chunked'], 'zz\r\n'),
  };
  await Promise.all(
    Object.entries(cases).map(async ([name, request]) => {
      const outcome = await exchange(url, request, 10_000);
      t.ok(outcome.closed, `${name}: closed`);
      t.equal(outcome.data, '', `${name}: nothing is sent`);
    }),
  );
});

t.test('/v1: what uWS holds without a status until its idle timer closes it', async (t) => {
  const cases: Record<string, string> = {
    'NUL in a field value': head(['GET /v1/decisions HTTP/1.1', 'Host: a', 'X-Note: a\0b']),
    'a control character in a field value': head(['GET /v1/decisions HTTP/1.1', 'Host: a', 'X-Note: a\x01b']),
    'a field line without a colon': head(['GET /v1/decisions HTTP/1.1', 'Host: a', 'X-Note']),
    'HTTP/1.1 without Host': head(['GET /v1/decisions HTTP/1.1']),
    'HTTP/1.0 without Host': head(['GET /v1/decisions HTTP/1.0']),
    'HTTP/1.0 with Host': head(['GET /v1/decisions HTTP/1.0', 'Host: a']),
  };
  const outcomes = Object.entries(cases).map(async ([name, request]) => {
    const outcome = await exchange(url, request, 60_000);
    t.ok(outcome.closed, `${name}: closed by the server`);
    t.equal(outcome.data, '', `${name}: nothing is sent`);
  });
  t.equal((await call(url, 'GET', '/healthz')).status, 200, 'other connections are served meanwhile');
  await Promise.all(outcomes);
});

t.test('the gateway answers what its parser refuses with problem+json and closes', async (t) => {
  const cases: Record<string, { request: string; status: number; code: string }> = {
    'NUL in a field value': { request: head(['GET /api/x HTTP/1.1', 'Host: a', 'X-Note: a\0b']), status: 400, code: 'invalid_request' },
    'a control character in a field value': { request: head(['GET /api/x HTTP/1.1', 'Host: a', 'X-Note: a\x01b']), status: 400, code: 'invalid_request' },
    'DEL in a field value': { request: head(['GET /api/x HTTP/1.1', 'Host: a', 'X-Note: a\x7fb']), status: 400, code: 'invalid_request' },
    'a field line without a colon': { request: head(['GET /api/x HTTP/1.1', 'Host: a', 'X-Note']), status: 400, code: 'invalid_request' },
    'an unknown method': { request: head(['BREW /api/x HTTP/1.1', 'Host: a']), status: 501, code: 'not_implemented' },
    'a request line that is not HTTP': { request: head(['hello']), status: 400, code: 'invalid_request' },
    'a head over 16 KiB': { request: head(['GET /api/x HTTP/1.1', 'Host: a', `X-Note: ${'a'.repeat(20_000)}`]), status: 431, code: 'request_header_fields_too_large' },
    'a Content-Length that is not a number': { request: head(['POST /api/x HTTP/1.1', 'Host: a', 'Content-Length: abc'], '{}'), status: 400, code: 'invalid_request' },
    'Content-Length twice': { request: head(['POST /api/x HTTP/1.1', 'Host: a', 'Content-Length: 2', 'Content-Length: 3'], '{}x'), status: 400, code: 'invalid_request' },
    'Content-Length with Transfer-Encoding': {
      request: head(['POST /api/x HTTP/1.1', 'Host: a', 'Content-Length: 2', 'Transfer-Encoding: chunked'], '0\r\n\r\n'),
      status: 400,
      code: 'invalid_request',
    },
  };
  await Promise.all(
    Object.entries(cases).map(async ([name, { request, status, code }]) => {
      const outcome = await exchange(gateway, request, 10_000);
      t.equal(outcome.status, status, `${name}: ${status}`);
      t.match(outcome.data, /content-type: application\/problem\+json/i, `${name}: problem+json`);
      t.match(outcome.body, { status, code, requestId: String }, `${name}: the problem document`);
      t.ok(outcome.closed, `${name}: the connection is closed`);
    }),
  );
});

t.test('the gateway refuses a missing Host, and a single-valued field on several lines; HTTP/1.0 needs no Host', async (t) => {
  const missing = await exchange(gateway, head(['GET /api/x HTTP/1.1']), 10_000);
  t.equal(missing.status, 400, "node's own answer to HTTP/1.1 without Host");
  t.ok(missing.closed);
  const twice = await exchange(gateway, head(['GET /api/x HTTP/1.1', 'Host: a', 'Host: b', 'Connection: close']), 10_000);
  t.equal(twice.status, 400);
  t.match(twice.body, { code: 'invalid_request', detail: /host is sent 2 times/ });
  const agent = await exchange(gateway, head(['GET /api/x HTTP/1.1', 'Host: a', 'User-Agent: a', 'User-Agent: b', 'Connection: close']), 10_000);
  t.equal(agent.status, 400, 'node would keep the first User-Agent for the route policy and the upstream');
  t.match(agent.body, { code: 'invalid_request', header: 'user-agent', detail: /user-agent is sent 2 times/ });
  const old = await exchange(gateway, head(['GET /api/x HTTP/1.0']), 10_000);
  t.equal(old.status, 401, 'an HTTP/1.0 request without Host is read: this route wants a key');
});
