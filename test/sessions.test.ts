import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { SESSION_COOKIE } from '../proxy/http/session-cookie.ts';
import { bundledEngine } from './helpers/policies.ts';
import { sessionTokenOf } from './helpers/console-sessions.ts';
import { call, issueKey, startTestServer } from './helpers/gatehouse.ts';
import { wsUrl } from './helpers/stream-client.ts';

// Console sessions against a real server: the key exchanged for an HttpOnly cookie, the cookie
// authenticating requests and the stream, the CSRF and Origin checks, expiry, revocation and
// sign-out.

t.setTimeout(300_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

const REVIEWER = ['decisions:read', 'decisions:write', 'decisions:approve', 'stream:subscribe', 'impact:read'];

async function setup(t: Test) {
  const { url, admin, server } = await startTestServer(t, { policies: engine });
  const reviewer = await issueKey(url, admin, { env: 'sandbox', scopes: REVIEWER });
  return { url, admin, server, reviewer };
}

async function signIn(url: string, key: string): Promise<string> {
  const answer = await call(url, 'POST', '/v1/sessions', { key });
  if (answer.status !== 201) throw new Error(`sign-in failed: ${answer.status} ${answer.text}`);
  return sessionTokenOf(answer);
}

const withCookie = (session: string, headers: Record<string, string> = {}) => ({ headers: { cookie: `${SESSION_COOKIE}=${session}`, ...headers } });

t.test('signing in sets an HttpOnly, SameSite=Strict session cookie that authenticates as the key', async (t) => {
  const { url, admin, reviewer } = await setup(t);
  const signedIn = await call(url, 'POST', '/v1/sessions', { key: reviewer.key });
  t.equal(signedIn.status, 201);
  t.match(signedIn.headers.get('set-cookie'), /^gatehouse_session=ghs_[\w-]{43}; Path=\/; Max-Age=43200; HttpOnly; SameSite=Strict$/, 'no Secure over plain http');
  const session = sessionTokenOf(signedIn);
  t.notOk(signedIn.text.includes(session), 'the token is only in the cookie');
  t.notOk(signedIn.text.includes(reviewer.key), 'the key is not echoed');
  t.match(signedIn.json, { keyId: reviewer.id, env: 'sandbox', scopes: REVIEWER, session: { expiresAt: String, idleExpiresAt: String } });

  const me = await call(url, 'GET', '/v1/sessions/current', withCookie(session));
  t.equal(me.status, 200);
  t.equal(me.json.keyId, reviewer.id, 'the session acts as its key');
  const list = await call(url, 'GET', '/v1/decisions', withCookie(session));
  t.equal(list.status, 200, 'the cookie authenticates API calls');
  const byKey = await call(url, 'GET', '/v1/sessions/current', { key: reviewer.key });
  t.equal(byKey.json.session, null, 'a call made with the key has no session');

  const again = await call(url, 'POST', '/v1/sessions', withCookie(session, { 'x-gatehouse-csrf': '1' }));
  t.equal(again.status, 400, 'a session cannot start another (it would outlive its own limit)');

  const secure = await call(url, 'POST', '/v1/sessions', { key: reviewer.key, headers: { 'x-forwarded-proto': 'https' } });
  t.match(secure.headers.get('set-cookie'), /; Secure$/, 'Secure once the browser came over https');

  const forged = await call(url, 'GET', '/v1/decisions', withCookie('ghs_forged'));
  t.equal(forged.status, 401, 'an unknown token is refused');
  t.match(forged.headers.get('set-cookie'), /^gatehouse_session=; Path=\/; Max-Age=0/, 'and the browser is told to forget it');

  const memoryOnly = await issueKey(url, admin, { env: 'sandbox', scopes: ['memory:read'] });
  const refused = await call(url, 'POST', '/v1/sessions', { key: memoryOnly.key });
  t.equal(refused.status, 403, 'signing in needs decisions:read');
  t.notOk(refused.headers.get('set-cookie'), 'and sets no cookie');
});

t.test('cookie-authenticated changes need the CSRF header and this origin', async (t) => {
  const { url, reviewer } = await setup(t);
  const session = await signIn(url, reviewer.key);
  const body = { title: 'Deploy', policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 10 }] };

  const forged = await call(url, 'POST', '/v1/decisions', { body, ...withCookie(session) });
  t.equal(forged.status, 403, 'a POST without X-Gatehouse-CSRF is refused');
  t.equal(forged.json.code, 'forbidden');
  t.match(forged.json.detail, /X-Gatehouse-CSRF: 1/);

  const host = new URL(url).host;
  const crossSite = await call(url, 'POST', '/v1/decisions', { body, ...withCookie(session, { 'x-gatehouse-csrf': '1', origin: 'https://evil.example' }) });
  t.equal(crossSite.status, 403, 'another origin is refused even with the header');
  const crossRead = await call(url, 'GET', '/v1/decisions', withCookie(session, { origin: 'https://evil.example' }));
  t.equal(crossRead.status, 403, 'reads from another origin too');

  const created = await call(url, 'POST', '/v1/decisions', { body, ...withCookie(session, { 'x-gatehouse-csrf': '1', origin: `http://${host}` }) });
  t.equal(created.status, 200, 'the console page (same origin, header set) may act');
  t.equal(created.json.createdBy, reviewer.id, 'as the key');

  const viaKey = await call(url, 'POST', '/v1/decisions', { key: reviewer.key, body });
  t.equal(viaKey.status, 200, 'requests with a key need no CSRF header');

  const trace = await call(url, 'GET', `/v1/impact/trace?decision=${created.json.id}`, { key: reviewer.key });
  t.ok(trace.json.entries.some((e: { route: string; status: number; keyId: string }) => e.route === '/v1/decisions' && e.status === 200 && e.keyId === reviewer.id), 'the cookie call is audited under the key');
});

t.test('a session ends when idle or too old, when its key is revoked, and on sign-out', async (t) => {
  const { url, admin, server, reviewer } = await setup(t);
  const { sessions } = server.services;
  const session = await signIn(url, reviewer.key);
  const now = Date.now();

  t.equal(sessions.resolve(session, now + 30_000).touched, null, 'a use within a minute does not rewrite the session');
  const touched = sessions.resolve(session, now + 10 * 60_000).touched;
  t.ok(touched && touched.idleExpiresAt > now + sessions.limits.idleMs, 'a later use moves the idle expiry forward');
  t.throws(() => sessions.resolve(session, now + sessions.limits.idleMs + 1000), { code: 'unauthenticated' }, 'idle past 8 hours: ended');
  await server.services.store.commit(() => sessions.write(touched!));
  t.ok(sessions.resolve(session, now + sessions.limits.idleMs + 1000), 'used meanwhile: still on');
  t.throws(() => sessions.resolve(session, now + sessions.limits.maxMs + 1000), { code: 'unauthenticated' }, 'past 12 hours: ended however used');
  t.equal(await sessions.purgeExpired(now + sessions.limits.maxMs + 1000), 1, 'ended sessions are purged');
  t.equal((await call(url, 'GET', '/v1/decisions', withCookie(session))).status, 401, 'a purged session is refused');

  const second = await signIn(url, reviewer.key);
  t.equal((await call(url, 'GET', '/v1/decisions', withCookie(second))).status, 200);
  const revoked = await call(url, 'DELETE', `/v1/keys/${reviewer.id}`, { key: admin });
  t.equal(revoked.status, 200);
  const after = await call(url, 'GET', '/v1/decisions', withCookie(second));
  t.equal(after.status, 401, 'a revoked key ends its sessions at once');
  t.match(after.json.detail, /revoked/);

  const other = await issueKey(url, admin, { env: 'sandbox', scopes: REVIEWER });
  const third = await signIn(url, other.key);
  const noHeader = await call(url, 'DELETE', '/v1/sessions/current', withCookie(third));
  t.equal(noHeader.status, 403, 'signing out is a change too: it needs the CSRF header');
  const out = await call(url, 'DELETE', '/v1/sessions/current', withCookie(third, { 'x-gatehouse-csrf': '1' }));
  t.equal(out.status, 204);
  t.match(out.headers.get('set-cookie'), /^gatehouse_session=; Path=\/; Max-Age=0; HttpOnly; SameSite=Strict/);
  t.equal((await call(url, 'GET', '/v1/decisions', withCookie(third))).status, 401, 'the signed-out token is dead');
  t.equal((await call(url, 'DELETE', '/v1/sessions/current', { key: other.key })).status, 404, 'a key has no session to end');
});

/** Opens the stream with headers; resolves with the socket, or the refused upgrade's status. */
function upgrade(t: Test, url: string, headers: Record<string, string>): Promise<WebSocket | number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl(url), { headers });
    t.teardown(() => ws.terminate());
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.once('error', reject);
  });
}

t.test('the stream accepts the session cookie from this origin', async (t) => {
  const { url, reviewer } = await setup(t);
  const session = await signIn(url, reviewer.key);
  const cookie = `${SESSION_COOKIE}=${session}`;
  const origin = `http://${new URL(url).host}`;

  t.equal(await upgrade(t, url, { cookie }), 403, 'an upgrade by cookie without Origin is refused');
  t.equal(await upgrade(t, url, { cookie, origin: 'http://evil.example' }), 403, 'from another origin: refused (cross-site WebSocket hijacking)');
  t.equal(await upgrade(t, url, { cookie: `${SESSION_COOKIE}=ghs_nope`, origin }), 401, 'an unknown session: 401');

  const ws = await upgrade(t, url, { cookie, origin });
  if (typeof ws === 'number') throw new Error(`upgrade refused: ${ws}`);
  const messages: Array<{ type: string; kind?: string; data?: { title?: string } }> = [];
  const arrived = (match: (m: (typeof messages)[number]) => boolean) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out; got ${JSON.stringify(messages)}`)), 10_000);
      const check = () => {
        if (!messages.some(match)) return;
        clearTimeout(timer);
        ws.off('message', check);
        resolve();
      };
      ws.on('message', check);
    });
  ws.on('message', (data) => messages.push(JSON.parse(data.toString())));
  const subscribed = arrived((m) => m.type === 'subscribed');
  ws.send(JSON.stringify({ type: 'subscribe', topics: ['decisions'] }));
  await subscribed;
  const created = arrived((m) => m.kind === 'decision.created' && m.data?.title === 'Streamed');
  await call(url, 'POST', '/v1/decisions', { key: reviewer.key, body: { title: 'Streamed', policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 90 }] } });
  await created;
  t.pass('a cookie-authenticated subscriber receives decision events');
  ws.close();
});
