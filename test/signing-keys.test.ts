import { calculateJwkThumbprint } from 'jose';
import t from 'tap';
import { call, issueKey, newSigningKey, startTestServer } from './helpers/gatehouse.ts';
import { keyPair, send, signed } from './helpers/signing.ts';

// The signing-key routes: who may call them, what JWKs they refuse, rotation and revocation.

t.test('registering, listing and refusing keys', async (t) => {
  const { url, admin } = await startTestServer(t);
  const owner = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  const path = `/v1/keys/${owner.id}/signing-keys`;
  const ed = keyPair('ed25519', 'ed-1');
  const created = await call(url, 'POST', path, { key: admin, body: { jwk: ed.jwk } });
  t.equal(created.status, 201, 'an admin registers a key for another key');
  t.match(created.json, { owner: owner.id, kid: 'ed-1', alg: 'ed25519', status: 'active', jwk: { kty: 'OKP', crv: 'Ed25519' }, revokedAt: null });

  const { kid: _kid, ...anonymous } = keyPair('ecdsa-p256-sha256').jwk;
  const derived = await call(url, 'POST', path, { key: owner.key, body: { jwk: anonymous } });
  t.equal(derived.status, 201, 'the key registers its own, without the admin scope');
  t.equal(derived.json.kid, await calculateJwkThumbprint(anonymous as never, 'sha256'), 'without a kid, the RFC 7638 thumbprint is the kid');

  const hmac = keyPair('hmac-sha256', 'shared-1');
  t.equal((await call(url, 'POST', path, { key: owner.key, body: { jwk: hmac.jwk } })).status, 201);
  const listed = await call(url, 'GET', path, { key: owner.key });
  t.same(listed.json.data.map((k: { kid: string }) => k.kid).sort(), ['ed-1', derived.json.kid, 'shared-1'].sort());
  t.notMatch(listed.text, String(hmac.jwk.k), 'an HMAC secret is never shown');

  const { privateKey } = (await import('node:crypto')).generateKeyPairSync('ed25519');
  const privateJwk = { ...privateKey.export({ format: 'jwk' }), kid: 'leaky' };
  const refusals: [string, unknown, number, RegExp][] = [
    ['a private Ed25519 key', { jwk: privateJwk }, 400, /private key material \(d\)/],
    ['an alg that does not fit', { jwk: keyPair('ed25519').jwk, alg: 'rsa-pss-sha512' }, 400, /signs with ed25519/],
    ['a P-384 key', { jwk: { kty: 'EC', crv: 'P-384', x: 'AA', y: 'AA', kid: 'p384' } }, 400, /must be an Ed25519/],
    ['an HMAC key without kid', { jwk: { kty: 'oct', k: Buffer.alloc(32, 1).toString('base64url') } }, 400, /needs a kid/],
    ['a short HMAC secret', { jwk: { kty: 'oct', k: 'c2hvcnQ', kid: 'short' } }, 400, /at least 32 bytes/],
    ['a broken key', { jwk: { kty: 'OKP', crv: 'Ed25519', x: 'AAAA', kid: 'broken' } }, 400, /not a valid ed25519 key/],
    ['a kid that is taken', { jwk: keyPair('ed25519', 'ed-1').jwk }, 409, /already registered/],
    ['no JWK', { alg: 'ed25519' }, 400, /jwk/],
  ];
  for (const [what, body, status, detail] of refusals) {
    const answer = await call(url, 'POST', path, { key: owner.key, body });
    t.equal(answer.status, status, `${what}: ${status}`);
    t.match(answer.json.detail + JSON.stringify(answer.json.errors ?? ''), detail);
  }
  const rsaPrivate = (await import('node:crypto')).generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  t.match((await call(url, 'POST', path, { key: owner.key, body: { jwk: { ...rsaPrivate, kid: 'rsa-private' } } })).json.detail, /d, p, q, dp, dq, qi/);
  const weak = (await import('node:crypto')).generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'jwk' });
  t.match((await call(url, 'POST', path, { key: owner.key, body: { jwk: { ...weak, kid: 'weak' } } })).json.detail, /2048 bits/);
  t.equal((await call(url, 'GET', path, { key: owner.key })).json.data.length, 3, 'nothing refused was stored');
});

t.test('who may manage signing keys', async (t) => {
  const { url, admin, server } = await startTestServer(t);
  const owner = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  const other = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  const sandboxAdmin = await issueKey(url, admin, { env: 'sandbox', scopes: ['admin'] });
  const jwk = keyPair('ed25519').jwk;
  const byOther = await call(url, 'POST', `/v1/keys/${owner.id}/signing-keys`, { key: other.key, body: { jwk } });
  t.equal(byOther.status, 403, "another key may not touch a key's signing keys");
  t.equal(byOther.json.code, 'insufficient_scope');
  t.equal((await call(url, 'GET', `/v1/keys/${server.adminKey.id}/signing-keys`, { key: sandboxAdmin.key })).status, 404, 'a sandbox admin does not see production keys');
  t.equal((await call(url, 'GET', `/v1/keys/${owner.id}/signing-keys`, { key: sandboxAdmin.key })).status, 200, 'but manages sandbox ones');
  t.equal((await call(url, 'GET', '/v1/keys/key_missing/signing-keys', { key: admin })).status, 404);
  await call(url, 'DELETE', `/v1/keys/${other.id}`, { key: admin });
  t.equal((await call(url, 'POST', `/v1/keys/${other.id}/signing-keys`, { key: admin, body: { jwk } })).status, 409, 'not for a revoked key');
});

t.test('rotation and revocation', async (t) => {
  const { url, admin, adminSigner, server } = await startTestServer(t);
  const path = `/v1/keys/${server.adminKey.id}/signing-keys`;
  const unsigned = await call(url, 'POST', path, { key: admin, body: { jwk: keyPair('ed25519').jwk }, signer: null });
  t.equal(unsigned.status, 401, 'once a key signs, adding keys needs a signature');
  t.equal(unsigned.json.code, 'signature_required');

  const next = newSigningKey('rotated-in');
  t.equal((await call(url, 'POST', path, { key: admin, body: { jwk: next.jwk } })).status, 201, 'a second key while the first is active');
  const withNext = signed(url, admin, next.signer, { method: 'GET', path: '/v1/keys' });
  t.equal((await send(url, withNext)).status, 200, 'both keys sign');
  t.equal((await send(url, signed(url, admin, adminSigner, { method: 'GET', path: '/v1/keys' }))).status, 200);

  const revoked = await call(url, 'DELETE', `${path}/${encodeURIComponent(adminSigner.kid)}`, { key: admin, signer: next.signer });
  t.equal(revoked.status, 200);
  t.match(revoked.json, { kid: adminSigner.kid, status: 'revoked', revokedBy: server.adminKey.id, revokedAt: /^\d{4}-/ });
  const old = await send(url, signed(url, admin, adminSigner, { method: 'GET', path: '/v1/keys' }));
  t.match(old.json, { code: 'signature_invalid', check: 'unknown_key' }, 'a revoked key no longer signs');
  t.equal((await call(url, 'DELETE', `${path}/${encodeURIComponent(adminSigner.kid)}`, { key: admin, signer: next.signer })).status, 409, 'revoking twice conflicts');
  t.equal((await call(url, 'DELETE', `${path}/nope`, { key: admin, signer: next.signer })).status, 404);
  const listed = await call(url, 'GET', path, { key: admin, signer: next.signer });
  t.same(
    listed.json.data.map((k: { kid: string; status: string }) => [k.kid, k.status]).sort(),
    [
      [adminSigner.kid, 'revoked'],
      ['rotated-in', 'active'],
    ].sort(),
    'the revoked key stays on record',
  );
  const reuse = await call(url, 'POST', path, { key: admin, body: { jwk: { ...keyPair('ed25519').jwk, kid: adminSigner.kid } }, signer: next.signer });
  t.equal(reuse.status, 409, 'a kid is never reused');
});
