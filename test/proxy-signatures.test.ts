import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import t, { type Test } from 'tap';
import { WebSocket } from 'ws';
import { JwtIdentities } from '../core/jwt-identities.ts';
import { contentDigest } from '../core/signatures/content-digest.ts';
import { signRequest } from '../core/signatures/signer.ts';
import type { ServerConfig } from '../proxy/server.ts';
import { call, enrollSigner, issueKey, startTestServer, tempDir, type Answer } from './helpers/gatehouse.ts';
import { echoWebSockets, proxyEntries, routePolicies, routesFile, send, startUpstream, type RawAnswer, type Upstream } from './helpers/upstream.ts';

// The gateway's authenticate → verify signature steps: RFC 9421 signatures of proxied requests
// and WebSocket upgrades, checked by the same verifier as /v1 (digests against the body
// received), gated+signed paths held and sent, and routes that authenticate with JWTs.

t.setTimeout(600_000);

// A route policy that reads the token's claims: the payments team's viewers only.
const CLAIMS_ROUTE = `package gatehouse.claims_route.v1

default allow := false

allow if {
	input.principal.claims.team == "payments"
	"viewer" in input.principal.roles
}

gate := "auto"

reasons contains "only viewers of the payments team may call this route" if not allow
`;
const engine = await routePolicies(t, {}, { 'claims-route-v1.rego': CLAIMS_ROUTE });
t.teardown(() => engine.close());

const ISSUER = 'https://idp.example';
const ACT = ['decisions:read', 'decisions:approve', 'decisions:execute', 'decisions:write'];

async function setup(t: Test, upstream: Upstream, config: Partial<ServerConfig> = {}) {
  const dir = tempDir(t);
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'idp-1', alg: 'ES256' }] }));
  const jwtIdentities = new JwtIdentities(
    [{ issuer: ISSUER, audience: 'gatehouse', jwks: { file: 'jwks.json' }, algorithms: ['ES256'], env: 'sandbox', allowedScopes: [], rolesClaim: 'roles' }],
    dir,
  );
  const route = { upstream: upstream.url, policy: 'route-access-v1', auth: 'api-key' };
  const file = routesFile(dir, [
    { ...route, name: 'sso', match: { host: 'sso.test', pathPrefix: '/api' }, policy: 'claims-route-v1', auth: 'jwt' },
    { ...route, name: 'live', match: { pathPrefix: '/api/live' }, requireSignature: true },
    { ...route, name: 'api', match: { pathPrefix: '/api' } },
    { ...route, name: 'admin', match: { pathPrefix: '/admin' } },
  ]);
  const { url, admin, server } = await startTestServer(t, { policies: engine, proxy: { routesFile: file, port: 0 }, jwtIdentities, ...config });
  const operator = await issueKey(url, admin, { env: 'sandbox', scopes: ACT, roles: ['operator'], name: 'requester' });
  const signer = await enrollSigner(url, operator.key, operator.id);
  const gateway = server.gateway!.url;
  /** A request signed by the operator for the gateway, with its body if any. */
  const signed = (method: string, path: string, body?: string, headers: Record<string, string> = {}) => {
    const all = { authorization: `Bearer ${operator.key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers };
    return { headers: { ...all, ...signRequest({ method, url: gateway + path, headers: all, body: body ?? null }, signer) }, ...(body !== undefined ? { body } : {}) };
  };
  const jwt = (claims: Record<string, unknown>, expiresAt: number | string = '5m') =>
    new SignJWT({ roles: ['viewer'], team: 'payments', ...claims })
      .setProtectedHeader({ alg: 'ES256', kid: 'idp-1' })
      .setIssuer(ISSUER)
      .setAudience('gatehouse')
      .setSubject('svc-payments')
      .setIssuedAt()
      .setExpirationTime(expiresAt)
      .sign(privateKey as CryptoKey);
  return { url, admin, server, gateway, operator, signer, signed, jwt };
}


function refusedWith(t: Test, answer: RawAnswer, code: string, check?: string) {
  t.equal(answer.status, 401, answer.body.toString());
  t.equal(answer.headers['content-type'], 'application/problem+json');
  t.match(answer.json, { code, ...(check ? { check } : {}) });
}

const REPORT = JSON.stringify({ period: '2025-Q1' });

t.test('signed requests: forwarded when they verify, refused with the failed check when not', async (t) => {
  const upstream = await startUpstream(t);
  const { gateway, server, operator, signer, signed } = await setup(t, upstream);

  // POST /admin is a `signed` path of the bundled data, granted to operators.
  const good = signed('POST', '/admin/reports?format=csv', REPORT);
  const forwarded = await send(gateway, 'POST', '/admin/reports?format=csv', good);
  t.equal(forwarded.status, 200, forwarded.body.toString());
  t.equal(upstream.received.length, 1);
  const seen = upstream.received[0]!;
  t.equal(seen.body.toString(), REPORT, 'the body checked is the body forwarded');
  for (const name of ['authorization', 'signature', 'signature-input']) t.equal(seen.headers[name], undefined, `${name} is not forwarded`);
  t.equal(seen.headers['content-digest'], contentDigest(Buffer.from(REPORT)), 'Content-Digest describes the body, and goes on');

  refusedWith(t, await send(gateway, 'POST', '/admin/reports?format=csv', good), 'signature_invalid', 'replay');

  const unsigned = await send(gateway, 'POST', '/admin/reports', { headers: { authorization: `Bearer ${operator.key}`, 'content-type': 'application/json' }, body: REPORT });
  refusedWith(t, unsigned, 'signature_required');
  t.match(unsigned.json, { policy: 'route-access-v1', route: 'admin', reasons: ['this route requires a signed request'] });

  const otherPath = signed('POST', '/admin/reports', REPORT);
  refusedWith(t, await send(gateway, 'POST', '/admin/other', otherPath), 'signature_invalid', 'bad_signature');

  const otherBody = signed('POST', '/admin/reports', REPORT);
  refusedWith(t, await send(gateway, 'POST', '/admin/reports', { ...otherBody, body: REPORT.replace('Q1', 'Q2') }), 'signature_invalid', 'digest');

  const forged = JSON.stringify({ period: 'forged' });
  const otherDigest = signed('POST', '/admin/reports', REPORT);
  const reDigested = { headers: { ...otherDigest.headers, 'content-digest': contentDigest(Buffer.from(forged)) }, body: forged };
  refusedWith(t, await send(gateway, 'POST', '/admin/reports', reDigested), 'signature_invalid', 'bad_signature');

  // A body no signature covers is refused without being read (it would have been streamed).
  const all = { authorization: `Bearer ${operator.key}`, 'content-type': 'application/json' };
  const bodiless = { ...all, ...signRequest({ method: 'POST', url: `${gateway}/admin/reports`, headers: all, body: null }, signer) };
  refusedWith(t, await send(gateway, 'POST', '/admin/reports', { headers: bodiless, body: REPORT }), 'signature_invalid', 'missing_component');

  // A signed bodiless request on an ordinary route: the policy sees who signed.
  const read = await send(gateway, 'GET', '/api/orders', signed('GET', '/api/orders'));
  t.equal(read.status, 200);
  t.equal(upstream.received.length, 2, 'only the two good requests reached the upstream');

  const entries = await proxyEntries(server, 8);
  t.match(
    entries.map((e) => [e.status, e.code, e.signature?.outcome, e.signature?.failure ?? null]),
    [
      [200, null, 'verified', null],
      [401, 'signature_invalid', 'failed', 'replay'],
      [401, 'signature_required', 'unsigned', null],
      [401, 'signature_invalid', 'failed', 'bad_signature'],
      [401, 'signature_invalid', 'failed', 'digest'],
      [401, 'signature_invalid', 'failed', 'bad_signature'],
      [401, 'signature_invalid', 'failed', 'missing_component'],
      [200, null, 'verified', null],
    ],
  );
  t.match(entries[0]!.signature, { label: 'sig1', keyId: signer.kid, alg: 'ed25519' });
  t.ok(server.services.audit.verify().ok);
});

t.test('the server setting applies to proxied requests; signed bodies are bounded', async (t) => {
  const upstream = await startUpstream(t);
  const { gateway, operator, signed } = await setup(t, upstream, { signatures: 'all', bodyLimitBytes: 1024 });
  const unsigned = await send(gateway, 'GET', '/api/orders', { headers: { authorization: `Bearer ${operator.key}` } });
  refusedWith(t, unsigned, 'signature_required');
  t.equal(unsigned.json.keyId, operator.id, 'the setting (all), not the policy, refused it');
  t.equal((await send(gateway, 'GET', '/api/orders', signed('GET', '/api/orders'))).status, 200);

  const big = JSON.stringify({ blob: 'x'.repeat(4096) });
  const tooLarge = await send(gateway, 'POST', '/admin/reports', signed('POST', '/admin/reports', big));
  t.equal(tooLarge.status, 413);
  t.match(tooLarge.json, { code: 'payload_too_large', limit: 1024 });
  t.equal(upstream.received.length, 1);
});

t.test('a gated and signed path is held, then sent once approved and executed', async (t) => {
  const upstream = await startUpstream(t);
  const { url, admin, gateway, signed } = await setup(t, upstream);
  const approver = await issueKey(url, admin, { env: 'sandbox', scopes: ACT, roles: ['operator'], name: 'approver' });
  // The route policy asks for signatures on its actions too: the approver signs its /v1 calls.
  await enrollSigner(url, approver.key, approver.id);

  const held = await send(gateway, 'DELETE', '/admin/users/7', signed('DELETE', '/admin/users/7'));
  t.equal(held.status, 202, held.body.toString());
  t.match(held.json, { gate: 'human_approval', policy: 'route-access-v1', subject: { type: 'proxy-request' } });
  t.equal(upstream.received.length, 0);
  const id = held.json.id as string;
  t.equal((await call(url, 'POST', `/v1/decisions/${id}/approve`, { key: approver.key })).status, 200);
  t.equal((await call(url, 'POST', `/v1/decisions/${id}/execute`, { key: approver.key })).status, 200);
  let result: Answer | undefined;
  for (let i = 0; i < 200 && result?.json?.state !== 'complete'; i++) {
    if (i) await new Promise((r) => setTimeout(r, 25));
    result = await call(url, 'GET', `/v1/decisions/${id}/result`, { key: approver.key });
  }
  t.match(result?.json, { state: 'complete', response: { status: 200 } });
  t.equal(upstream.received.length, 1, 'sent once');
  t.match(upstream.received[0], { method: 'DELETE', url: '/admin/users/7' });
  for (const name of ['authorization', 'signature', 'signature-input']) t.equal(upstream.received[0]!.headers[name], undefined, `${name} is not sent`);
});

t.test('WebSocket upgrades are verified like requests', async (t) => {
  const upstream = await startUpstream(t);
  const upgrades = echoWebSockets(t, upstream);
  const { gateway, operator, signed } = await setup(t, upstream);
  const wsUrl = gateway.replace('http:', 'ws:') + '/api/live';
  const open = (headers: Record<string, string>) =>
    new Promise<{ ws: WebSocket } | { status: number; body: string }>((resolve, reject) => {
      const ws = new WebSocket(wsUrl, { headers });
      t.teardown(() => ws.terminate());
      ws.once('open', () => resolve({ ws }));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      ws.once('error', reject);
    });

  const good = signed('GET', '/api/live');
  const opened = await open(good.headers);
  if (!('ws' in opened)) throw new Error(`the signed upgrade was refused: ${opened.status} ${opened.body}`);
  const echoed = new Promise<string>((resolve) => opened.ws.once('message', (data) => resolve(String(data))));
  opened.ws.send('hello');
  t.equal(await echoed, 'echo:hello', 'a signed upgrade is proxied');
  for (const name of ['authorization', 'signature', 'signature-input']) t.equal(upgrades[0]![name], undefined, `${name} is not passed upstream`);
  // Closed here: the upstream's teardown waits for its upgraded connections to end.
  await new Promise((resolve) => {
    opened.ws.once('close', resolve);
    opened.ws.close();
  });

  const unsigned = await open({ authorization: `Bearer ${operator.key}` });
  t.match(unsigned, { status: 401 });
  if ('body' in unsigned) t.match(JSON.parse(unsigned.body), { code: 'signature_required', route: 'live' });
  const replayed = await open(good.headers);
  if ('body' in replayed) t.match(JSON.parse(replayed.body), { code: 'signature_invalid', check: 'replay' });
  else t.fail('a replayed upgrade opened');
  t.equal(upgrades.length, 1, 'only the signed upgrade reached the upstream');
});

t.test('JWT routes: the token verified, its claims given to the policy', async (t) => {
  const upstream = await startUpstream(t);
  const { gateway, server, operator, jwt } = await setup(t, upstream);
  const onSso = (token: string) => send(gateway, 'GET', '/api/orders', { headers: { host: 'sso.test', authorization: `Bearer ${token}` } });

  const ok = await onSso(await jwt({}));
  t.equal(ok.status, 200, ok.body.toString());
  t.equal(upstream.received.length, 1);
  t.equal(upstream.received[0]!.headers['authorization'], undefined, 'the token is not forwarded');

  const otherTeam = await onSso(await jwt({ team: 'growth' }));
  t.equal(otherTeam.status, 403, 'the policy read the team claim');
  t.match(otherTeam.json, { code: 'policy_denied', reasons: ['only viewers of the payments team may call this route'] });

  const expired = await onSso(await jwt({}, Math.floor(Date.now() / 1000) - 60));
  t.equal(expired.status, 401);
  t.match(expired.json, { code: 'unauthenticated', detail: /expired/ });
  t.match(expired.headers['www-authenticate'], /error="invalid_token"/);
  const forged = await onSso(`${(await jwt({})).slice(0, -4)}AAAA`);
  t.equal(forged.status, 401);
  t.match(forged.json, { code: 'unauthenticated', detail: /signature does not verify/ });
  const apiKey = await onSso(operator.key);
  t.equal(apiKey.status, 401, 'an API key is not a JWT');
  const none = await send(gateway, 'GET', '/api/orders', { headers: { host: 'sso.test' } });
  t.equal(none.status, 401);
  t.match(none.json.detail, /JWT/);
  t.equal(upstream.received.length, 1, 'only the valid token was forwarded');

  const entries = await proxyEntries(server, 6);
  t.match(entries[0], { route: 'proxy:sso', status: 200, keyId: `jwt:${ISSUER}#svc-payments`, env: 'sandbox', signature: { outcome: 'unsigned' } });
});
