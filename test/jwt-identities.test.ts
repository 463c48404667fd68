import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import t from 'tap';
import { JwtIdentities } from '../core/jwt-identities.ts';
import { PolicyEngine } from '../policies/engine/index.ts';
import { call, startTestServer, tempDir } from './helpers/gatehouse.ts';

// JWT service identities: tokens from configured issuers, verified with jose against a local
// JWKS file or a JWKS URL (served here by a real HTTP server, and rotated), and their claims
// in the policy input.

t.setTimeout(300_000);

const ISSUER = 'https://idp.example';
const AUDIENCE = 'gatehouse';

async function signingPair(kid: string): Promise<{ privateKey: CryptoKey; jwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

function token(privateKey: CryptoKey, kid: string, claims: Record<string, unknown> = {}, edit: (jwt: SignJWT) => SignJWT = (j) => j) {
  const jwt = new SignJWT({ scope: 'decisions:read decisions:write admin', roles: ['sre'], team: 'payments', ...claims })
    .setProtectedHeader({ alg: 'ES256', kid })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject('svc-payments')
    .setIssuedAt()
    .setExpirationTime('5m');
  return edit(jwt).sign(privateKey);
}

// A policy that reads a claim: only the payments team may create its decisions.
const CLAIMS_POLICY = `package gatehouse.claims_gate.v1

default allow := false

allow if input.principal.claims.team == "payments"

gate := "auto"

nextAction := "execute"

reasons contains "only the payments team may create these decisions" if not allow
`;

t.test('tokens from a local JWKS file', async (t) => {
  const dir = tempDir(t);
  const { privateKey, jwk } = await signingPair('local-1');
  writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [jwk] }));
  writeFileSync(
    join(dir, 'issuers.json'),
    JSON.stringify({
      issuers: [
        { issuer: ISSUER, audience: AUDIENCE, jwks: { file: 'jwks.json' }, algorithms: ['ES256'], env: 'sandbox', allowedScopes: ['decisions:read', 'decisions:write'], rolesClaim: 'roles' },
        { issuer: 'https://strict.example', audience: AUDIENCE, jwks: { file: 'jwks.json' }, algorithms: ['EdDSA'], env: 'production', allowedScopes: ['decisions:read'] },
      ],
    }),
  );
  const policiesDir = join(dir, 'policies');
  (await import('node:fs')).mkdirSync(policiesDir);
  writeFileSync(join(policiesDir, 'claims-gate-v1.rego'), CLAIMS_POLICY);
  const engine = await PolicyEngine.open({ sourceDir: policiesDir, buildDir: join(dir, 'build') });
  t.teardown(() => engine.close());
  const { url } = await startTestServer(t, { policies: engine, jwtIdentities: JwtIdentities.fromFile(join(dir, 'issuers.json')) });

  const good = await token(privateKey, 'local-1');
  const listed = await call(url, 'GET', '/v1/decisions', { key: good });
  t.equal(listed.status, 200, 'a valid token authenticates');
  const admin = await call(url, 'GET', '/v1/keys', { key: good });
  t.equal(admin.status, 403, 'scopes the issuer may not grant are dropped (admin)');

  const body = { title: 'Refund', policy: 'claims-gate-v1', context: 'order 42' };
  const created = await call(url, 'POST', '/v1/decisions', { key: good, body });
  t.equal(created.status, 200, 'the policy read the team claim');
  t.equal(created.json.createdBy, `jwt:${ISSUER}#svc-payments`);
  const otherTeam = await call(url, 'POST', '/v1/decisions', { key: await token(privateKey, 'local-1', { team: 'growth' }), body });
  t.equal(otherTeam.status, 403);
  t.same(otherTeam.json.reasons, ['only the payments team may create these decisions']);

  const now = Math.floor(Date.now() / 1000);
  const refused: [string, string, RegExp][] = [
    ['expired', await token(privateKey, 'local-1', {}, (j) => j.setIssuedAt(now - 600).setExpirationTime(now - 60)), /expired/],
    ['not yet valid', await token(privateKey, 'local-1', {}, (j) => j.setNotBefore(now + 600)), /nbf/],
    ['another audience', await token(privateKey, 'local-1', {}, (j) => j.setAudience('someone-else')), /aud/],
    ['an unknown issuer', await token(privateKey, 'local-1', {}, (j) => j.setIssuer('https://evil.example')), /not from a configured issuer/],
    ['an algorithm the issuer may not use', await token(privateKey, 'local-1', {}, (j) => j.setIssuer('https://strict.example')), /algorithm is not allowed/],
    ['an unknown kid', await token(privateKey, 'local-2'), /no key/],
    ['a forged signature', (await token(privateKey, 'local-1')).replace(/\.[^.]+$/, '.' + Buffer.alloc(64, 1).toString('base64url')), /signature/],
  ];
  for (const [what, jwt, detail] of refused) {
    const answer = await call(url, 'GET', '/v1/decisions', { key: jwt });
    t.equal(answer.status, 401, `${what}: 401`);
    t.match(answer.json.detail, detail, what);
    t.match(answer.headers.get('www-authenticate'), /invalid_token/);
  }
});

t.test('a JWKS URL, fetched, cached and refetched when the issuer rotates', async (t) => {
  const first = await signingPair('remote-1');
  const second = await signingPair('remote-2');
  const served: JWK[] = [first.jwk];
  let fetches = 0;
  const jwks = createServer((_req, res) => {
    fetches++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: served }));
  });
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => jwks.close(resolve)));
  const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`;
  const identities = new JwtIdentities([
    { issuer: ISSUER, audience: AUDIENCE, jwks: { url: jwksUrl, cooldownSeconds: 0 }, algorithms: ['ES256'], env: 'production', allowedScopes: ['decisions:read'] },
  ]);
  const { url } = await startTestServer(t, { jwtIdentities: identities });

  t.equal((await call(url, 'GET', '/v1/decisions', { key: await token(first.privateKey, 'remote-1') })).status, 200, 'the key set is fetched');
  t.equal((await call(url, 'GET', '/v1/decisions', { key: await token(first.privateKey, 'remote-1') })).status, 200, 'and cached');
  t.equal(fetches, 1, 'one fetch for both');
  t.equal(
    (await call(url, 'GET', '/v1/decisions', { key: await token(second.privateKey, 'remote-2') })).status,
    401,
    'a key the issuer has not published yet is refused',
  );
  served.push(second.jwk);
  t.equal((await call(url, 'GET', '/v1/decisions', { key: await token(second.privateKey, 'remote-2') })).status, 200, 'a rotated-in key is accepted after a refetch');
  t.ok(fetches >= 2, 'the set was fetched again');
});

t.test('an invalid issuers file is refused with where it is wrong', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'issuers.json'), JSON.stringify({ issuers: [{ issuer: ISSUER, audience: AUDIENCE, jwks: { file: 'x' }, algorithms: ['HS256'], env: 'sandbox', allowedScopes: [] }] }));
  t.throws(() => JwtIdentities.fromFile(join(dir, 'issuers.json')), /algorithms\/0/);
});
