import { createHash, createPublicKey, createSecretKey } from 'node:crypto';
import { createSigner, createVerifier, httpbis } from 'http-message-signatures';
import t from 'tap';
import { SIGNATURE_ALGORITHMS } from '../core/signatures/algorithms.ts';
import { signRequest } from '../core/signatures/signer.ts';
import { call, startTestServer } from './helpers/gatehouse.ts';
import { keyPair, send } from './helpers/signing.ts';

// Interoperability with an independent RFC 9421 implementation, the `http-message-signatures`
// package: requests it signs are accepted by the running server, and signatures the project's
// signer makes verify with it.

const BODY = JSON.stringify({ env: 'sandbox', scopes: ['decisions:read'] });

t.test('requests signed with http-message-signatures are accepted', async (t) => {
  const { url, admin, server } = await startTestServer(t);
  for (const alg of SIGNATURE_ALGORITHMS) {
    const { signer, jwk } = keyPair(alg);
    t.equal((await call(url, 'POST', `/v1/keys/${server.adminKey.id}/signing-keys`, { key: admin, body: { jwk } })).status, 201);
    const secretOrKey = alg === 'hmac-sha256' ? signer.key.export() : signer.key;
    const digest = `sha-256=:${createHash('sha256').update(BODY).digest('base64')}:`;
    const message = await httpbis.signMessage(
      {
        key: createSigner(secretOrKey, alg, signer.kid),
        fields: ['@method', '@target-uri', 'content-digest', 'content-type'],
        params: ['created', 'expires', 'nonce', 'keyid', 'alg'],
        paramValues: { nonce: `interop-${alg}` },
      },
      {
        method: 'POST',
        url: `${url}/v1/keys`,
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json', 'content-digest': digest },
      },
    );
    const headers = Object.fromEntries(Object.entries(message.headers).map(([name, value]) => [name, String(value)]));
    const answer = await send(url, { method: 'POST', path: '/v1/keys', headers, body: BODY });
    t.equal(answer.status, 201, `${alg}: accepted (${answer.json?.detail ?? 'ok'})`);
  }
});

t.test("the project's signatures verify with http-message-signatures", async (t) => {
  for (const alg of SIGNATURE_ALGORITHMS) {
    const { signer, jwk } = keyPair(alg);
    const url = 'https://gatehouse.example/v1/decisions?x=1';
    const headers = { 'content-type': 'application/json', ...signRequest({ method: 'POST', url, headers: {}, body: BODY }, signer) };
    const verifyKey = alg === 'hmac-sha256' ? createSecretKey(Buffer.from(String(jwk.k), 'base64url')) : createPublicKey({ key: jwk as never, format: 'jwk' });
    const verified = await httpbis.verifyMessage(
      { keyLookup: async () => ({ id: signer.kid, algs: [alg], verify: createVerifier(verifyKey, alg) }) },
      { method: 'POST', url, headers },
    );
    t.equal(verified, true, `${alg}: verified by the package`);
  }
});
