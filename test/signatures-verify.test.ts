import t from 'tap';
import { SIGNATURE_ALGORITHMS } from '../core/signatures/algorithms.ts';
import { call, issueKey, startTestServer, tempDir } from './helpers/gatehouse.ts';
import { keyPair, send, signed, type RawRequest } from './helpers/signing.ts';

// RFC 9421 verification end to end, over real sockets: every algorithm, every change after
// signing refused with the check it breaks, replays (also across a restart), expiry, the skew
// window, several signatures by label, and the server's signature settings.

const SANDBOX_KEY = JSON.stringify({ env: 'sandbox', scopes: ['decisions:read'] });

t.test('each algorithm signs a request the server accepts', async (t) => {
  const { url, admin, server } = await startTestServer(t);
  for (const alg of SIGNATURE_ALGORITHMS) {
    const { signer, jwk } = keyPair(alg);
    const registered = await call(url, 'POST', `/v1/keys/${server.adminKey.id}/signing-keys`, { key: admin, body: { jwk } });
    t.equal(registered.status, 201, `${alg} key registered`);
    t.equal(registered.json.alg, alg);
    const answer = await send(url, signed(url, admin, signer, { method: 'POST', path: '/v1/keys', body: SANDBOX_KEY }));
    t.equal(answer.status, 201, `${alg}: a signed request is accepted`);
  }
  const entries = [...server.services.audit.all()].filter((e) => e.route === '/v1/keys' && e.method === 'POST');
  t.same(
    entries.map((e) => e.signature?.alg),
    SIGNATURE_ALGORITHMS,
    'the audit entries record the algorithm that verified',
  );
  t.ok(entries.every((e) => e.signature?.outcome === 'verified' && e.signature.failure === null));
});

t.test('every change after signing is refused with the check it breaks', async (t) => {
  const { url, admin, server, adminSigner } = await startTestServer(t);
  const other = keyPair('ecdsa-p256-sha256');
  t.equal((await call(url, 'POST', `/v1/keys/${server.adminKey.id}/signing-keys`, { key: admin, body: { jwk: other.jwk } })).status, 201);
  const fresh = (request: Omit<RawRequest, 'headers'> & { headers?: Record<string, string> }, components?: string[]) =>
    signed(url, admin, adminSigner, request, components ? { components } : {});
  const post = () => fresh({ method: 'POST', path: '/v1/keys?note=a', body: SANDBOX_KEY }, ['content-type']);

  t.equal((await send(url, post())).status, 201, 'the untouched request is accepted');
  const cases: [string, (r: RawRequest) => RawRequest, string][] = [
    ['path', (r) => ({ ...r, path: '/v1/decisions?note=a' }), 'bad_signature'],
    ['query', (r) => ({ ...r, path: '/v1/keys?note=b' }), 'bad_signature'],
    ['a covered header', (r) => ({ ...r, headers: { ...r.headers, 'content-type': 'application/json; charset=utf-8' } }), 'bad_signature'],
    ['one body byte', (r) => ({ ...r, body: r.body!.replace('sandbox', 'sandbox'.toUpperCase().slice(0, 1) + 'andbox') }), 'digest'],
    ['the digest', (r) => ({ ...r, headers: { ...r.headers, 'content-digest': 'sha-256=:' + Buffer.alloc(32).toString('base64') + ':' } }), 'bad_signature'],
    ['created', (r) => ({ ...r, headers: { ...r.headers, 'signature-input': r.headers['signature-input']!.replace(/created=(\d+)/, (_m, c) => `created=${Number(c) - 1}`) } }), 'bad_signature'],
    ['keyid, to another key', (r) => ({ ...r, headers: { ...r.headers, 'signature-input': r.headers['signature-input']!.replace(/keyid="[^"]+";alg="[^"]+"/, `keyid="${other.signer.kid}";alg="ecdsa-p256-sha256"`) } }), 'bad_signature'],
    ['keyid, to an unknown key', (r) => ({ ...r, headers: { ...r.headers, 'signature-input': r.headers['signature-input']!.replace(/keyid="[^"]+"/, 'keyid="nobody"') } }), 'unknown_key'],
  ];
  for (const [what, change, check] of cases) {
    const answer = await send(url, change(post()));
    t.equal(answer.status, 401, `changing ${what} is refused`);
    t.match(answer.json, { code: 'signature_invalid', check }, `changing ${what}: ${check}`);
  }
  const method = fresh({ method: 'GET', path: '/v1/keys' });
  const asPost = await send(url, { ...method, method: 'POST' });
  t.match(asPost.json, { code: 'signature_invalid', check: 'bad_signature' }, 'changing the method');

  const refusals = [...server.services.audit.all()].filter((e) => e.code === 'signature_invalid');
  t.equal(refusals.length, cases.length + 1, 'every refusal is audited');
  t.ok(refusals.every((e) => e.status === 401 && e.signature?.outcome === 'failed' && typeof e.signature.failure === 'string'));
  t.notOk(JSON.stringify(refusals).includes(String(adminSigner.key.export({ format: 'jwk' }).d)), 'never key material');
});

t.test('incomplete signatures and malformed fields', async (t) => {
  const { url, admin, adminSigner } = await startTestServer(t);
  const base = signed(url, admin, adminSigner, { method: 'POST', path: '/v1/keys', body: SANDBOX_KEY });
  const input = (value: string) => ({ ...base, headers: { ...base.headers, 'signature-input': value } });
  const created = Math.floor(Date.now() / 1000);
  const checks: [string, RawRequest, string][] = [
    ['no @method', input(`sig1=("@target-uri" "content-digest");created=${created};keyid="${adminSigner.kid}"`), 'missing_component'],
    ['only @authority and @path', input(`sig1=("@method" "@authority" "@path" "content-digest");created=${created};keyid="${adminSigner.kid}"`), 'missing_component'],
    ['a body without content-digest', input(`sig1=("@method" "@target-uri");created=${created};keyid="${adminSigner.kid}"`), 'missing_component'],
    ['no created', input(`sig1=("@method" "@target-uri" "content-digest");keyid="${adminSigner.kid}"`), 'created'],
    ['not a dictionary', input('sig1=("@method"'), 'malformed'],
    ['no Signature for the label', input(`other=("@method" "@target-uri" "content-digest");created=${created};keyid="${adminSigner.kid}"`), 'malformed'],
  ];
  for (const [what, request, check] of checks) {
    const answer = await send(url, request);
    t.match(answer.json, { code: 'signature_invalid', check }, `${what}: ${check}`);
  }
  const { 'signature-input': _input, ...withoutInput } = base.headers;
  t.match((await send(url, { ...base, headers: withoutInput })).json, { code: 'signature_invalid', check: 'malformed' }, 'Signature without Signature-Input');
});

t.test('replays, expiry and the skew window', async (t) => {
  const dataDir = tempDir(t);
  const adminKey = 'signatures-test-admin-key-0123456789';
  // Both servers answer for the same public URL, so a request signed for one is valid for the other.
  const publicUrl = 'http://gatehouse.test';
  const first = await startTestServer(t, { dataDir, adminKey, signatureSkewSeconds: 60, publicUrl });
  const now = Math.floor(Date.now() / 1000);
  const sign = (path: string, options = {}) => signed(publicUrl, adminKey, first.adminSigner, { method: 'GET', path }, options);
  const request = sign('/v1/keys');
  t.equal((await send(first.url, request)).status, 200);
  t.match((await send(first.url, request)).json, { code: 'signature_invalid', check: 'replay' }, 'the same signature again');
  t.equal((await send(first.url, sign('/v1/keys?env=sandbox', { nonce: 'n-1' }))).status, 200);
  t.match((await send(first.url, sign('/v1/keys?env=production', { nonce: 'n-1' }))).json, { check: 'replay' }, 'another signature with a used nonce');
  t.match((await send(first.url, sign('/v1/keys', { created: now - 120 }))).json, { check: 'created' }, 'created before the window');
  t.match((await send(first.url, sign('/v1/keys', { created: now + 120 }))).json, { check: 'created' }, 'created after the window');
  t.match((await send(first.url, sign('/v1/keys', { created: now - 10, expires: now - 1 }))).json, { check: 'expired' });
  const unused = sign('/v1/keys?env=sandbox');
  await first.server.close();

  const second = await startTestServer(t, { dataDir, adminKey, signatureSkewSeconds: 60, publicUrl });
  t.match((await send(second.url, request)).json, { code: 'signature_invalid', check: 'replay' }, 'still a replay after a restart');
  t.equal((await send(second.url, unused)).status, 200, 'a signature never used is accepted after the restart');
});

t.test('several signatures by label', async (t) => {
  const { url, admin, adminSigner, server } = await startTestServer(t);
  const second = keyPair('hmac-sha256');
  t.equal((await call(url, 'POST', `/v1/keys/${server.adminKey.id}/signing-keys`, { key: admin, body: { jwk: second.jwk } })).status, 201);
  const stranger = keyPair('ed25519');
  const combine = (a: RawRequest, b: RawRequest): RawRequest => ({
    ...a,
    headers: {
      ...a.headers,
      'signature-input': `${a.headers['signature-input']}, ${b.headers['signature-input']}`,
      signature: `${a.headers['signature']}, ${b.headers['signature']}`,
    },
  });
  const mine = (label: string) => signed(url, admin, adminSigner, { method: 'POST', path: '/v1/keys', body: SANDBOX_KEY }, { label });
  const theirs = signed(url, admin, stranger.signer, { method: 'POST', path: '/v1/keys', body: SANDBOX_KEY }, { label: 'proxy' });
  const both = combine(theirs, mine('client'));
  t.equal((await send(url, both)).status, 201, "a label by someone else's key is left alone");
  const entry = [...server.services.audit.all()].at(-1)!;
  t.match(entry.signature, { outcome: 'verified', label: 'client', keyId: adminSigner.kid });

  const hmac = signed(url, admin, second.signer, { method: 'POST', path: '/v1/keys', body: SANDBOX_KEY }, { label: 'hmac' });
  t.equal((await send(url, combine(mine('a'), hmac))).status, 201, 'two known signatures, both valid');
  const badHmac = { ...hmac, headers: { ...hmac.headers, signature: 'hmac=:' + Buffer.alloc(32).toString('base64') + ':' } };
  const refused = await send(url, combine(mine('b'), badHmac));
  t.match(refused.json, { code: 'signature_invalid', check: 'bad_signature', label: 'hmac' }, 'one known signature failing fails the request');
  t.same(
    refused.json.signatures.map((s: { label: string; result: string }) => [s.label, s.result]),
    [
      ['b', 'verified'],
      ['hmac', 'bad_signature'],
    ],
    'reported per label',
  );
});

t.test('signature settings', async (t) => {
  const production = await startTestServer(t);
  const sandbox = await issueKey(production.url, production.admin, { env: 'sandbox', scopes: ['decisions:read'] });
  const unsigned = await call(production.url, 'GET', '/v1/keys', { key: production.admin, signer: null });
  t.equal(unsigned.status, 401, 'production keys must sign by default');
  t.match(unsigned.json, { code: 'signature_required', keyId: production.server.adminKey.id });
  t.equal((await call(production.url, 'GET', '/v1/decisions', { key: sandbox.key })).status, 200, 'sandbox keys need not');

  const all = await startTestServer(t, { signatures: 'all' });
  const sandboxAll = await issueKey(all.url, all.admin, { env: 'sandbox', scopes: ['decisions:read'] });
  t.match((await call(all.url, 'GET', '/v1/decisions', { key: sandboxAll.key })).json, { code: 'signature_required' }, 'all: every API key signs');

  const off = await startTestServer(t, { signatures: 'off' });
  t.equal((await call(off.url, 'GET', '/v1/keys', { key: off.admin, signer: null })).status, 200, 'off: nobody must sign');
  const tampered = signed(off.url, off.admin, off.adminSigner, { method: 'GET', path: '/v1/keys' });
  t.match((await send(off.url, { ...tampered, path: '/v1/keys?x=1' })).json, { check: 'bad_signature' }, 'off: a signature sent is still verified');
});

t.test('a public URL sets the scheme and authority of @target-uri', async (t) => {
  const { url, admin, adminSigner } = await startTestServer(t, { publicUrl: 'https://gatehouse.example' });
  const direct = signed(url, admin, adminSigner, { method: 'GET', path: '/v1/keys' });
  t.match((await send(url, direct)).json, { check: 'bad_signature' }, 'signed for the address behind the proxy');
  const asPublished = signed('https://gatehouse.example', admin, adminSigner, { method: 'GET', path: '/v1/keys' });
  t.equal((await send(url, asPublished)).status, 200, 'signed for the public URL');
});
