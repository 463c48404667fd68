import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import type { SigningKey } from '../core/signatures/signer.ts';
import { signRequest } from '../core/signatures/signer.ts';
import { SESSION_CODE_TTL_MS } from '../core/session-codes.ts';
import { SESSION_COOKIE } from '../proxy/http/session-cookie.ts';
import { productionReviewer, sessionTokenOf, signInCode } from './helpers/console-sessions.ts';
import { gatehouse } from './helpers/cli.ts';
import { call, issueKey, signers, startTestServer, tempDir, type CallOptions } from './helpers/gatehouse.ts';
import { bundledEngine } from './helpers/policies.ts';
import { wsUrl } from './helpers/stream-client.ts';

// Console sessions for keys that must sign, against a real server and the bundled policies: a
// one-time code asked for with the key's own signature, redeemed with a page's public key; every
// request on that session signed with it (an unsigned one, or one signed with another key, is
// refused); the stream and sign-out as the only unsigned requests; codes used once and expiring;
// the session ending with sign-out and with the signing key that vouched for it.

t.setTimeout(300_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

const REVIEWER = ['decisions:read', 'decisions:approve', 'stream:subscribe', 'impact:read'];

async function setup(t: Test) {
  const { url, admin, server } = await startTestServer(t, { policies: engine });
  const reviewer = await productionReviewer(server, url, REVIEWER, 'prod reviewer');
  return { url, admin, server, reviewer, origin: `http://${new URL(url).host}` };
}

/** What the console's page holds: a fresh Ed25519 key pair, the private half for signing and the public JWK to register. */
function pageKey() {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey, jwk: publicKey.export({ format: 'jwk' }) as Record<string, unknown> };
}

async function redeem(url: string, code: string, jwk: Record<string, unknown>, headers: Record<string, string> = {}) {
  return call(url, 'POST', '/v1/sessions/redeem', { body: { code, jwk }, headers });
}

/** A session opened with a code, and the signer its page would sign with. */
async function keyBoundSession(url: string, key: string): Promise<{ token: string; signer: SigningKey }> {
  const page = pageKey();
  const answer = await redeem(url, await signInCode(url, key), page.jwk);
  if (answer.status !== 201) throw new Error(`redeem failed: ${answer.status} ${answer.text}`);
  return { token: sessionTokenOf(answer), signer: { kid: answer.json.session.signingKey.kid, alg: 'ed25519', key: page.privateKey } };
}

/** A request on the session, as the page sends it: the cookie, the CSRF header, this origin, and signed with `signer` unless null. */
function onSession(token: string, origin: string, signer: SigningKey | null, options: CallOptions = {}): CallOptions {
  return { ...options, signer, headers: { cookie: `${SESSION_COOKIE}=${token}`, 'x-gatehouse-csrf': '1', origin, ...options.headers } };
}

t.test('a key that must sign signs in with a code its own signature asked for, and the session signs every request', async (t) => {
  const { url, admin, server, reviewer, origin } = await setup(t);

  const byKey = await call(url, 'POST', '/v1/sessions', { key: reviewer.key, signer: null });
  t.match(byKey.json, { status: 401, code: 'signature_required' }, 'a production key cannot sign in with the key alone');
  const unsignedCode = await call(url, 'POST', '/v1/sessions/codes', { key: reviewer.key, signer: null });
  t.match(unsignedCode.json, { status: 401, code: 'signature_required' }, 'nor ask for a code unsigned');
  const sandbox = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  const sandboxCode = await call(url, 'POST', '/v1/sessions/codes', { key: sandbox.key });
  t.match(sandboxCode.json, { status: 401, code: 'signature_required' }, 'a code needs a signature even from a key the server lets go unsigned');

  const asked = await call(url, 'POST', '/v1/sessions/codes', { key: reviewer.key });
  t.equal(asked.status, 201, asked.text);
  t.match(asked.json, { code: /^ghc_[\w-]{43}$/, keyId: reviewer.id, expiresAt: String });
  const { code } = asked.json;

  const page = pageKey();
  t.equal((await redeem(url, 'ghc_' + 'x'.repeat(43), page.jwk)).status, 401, 'an unknown code is refused');
  t.equal((await redeem(url, code, { ...page.jwk, d: 'private' })).status, 400, 'a JWK with private members is refused');
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'jwk' });
  t.equal((await redeem(url, code, rsa as Record<string, unknown>)).status, 400, 'so is a key that is not Ed25519 or P-256');
  t.equal((await redeem(url, code, page.jwk, { origin: 'https://evil.example' })).status, 403, 'and a redemption from another origin');

  const redeemed = await redeem(url, code, { ...page.jwk, kid: 'chosen-by-page' }, { origin });
  t.equal(redeemed.status, 201, redeemed.text);
  t.match(redeemed.json, { keyId: reviewer.id, env: 'production', session: { signingKey: { alg: 'ed25519', authorisedBy: reviewer.kid } } });
  const { kid } = redeemed.json.session.signingKey;
  t.not(kid, 'chosen-by-page', "the session key is named by its thumbprint, not the page's choice");
  t.notOk(redeemed.text.includes(code), 'the code is not echoed');
  t.equal((await redeem(url, code, pageKey().jwk)).status, 401, 'a code is used once');
  const token = sessionTokenOf(redeemed);
  const signer: SigningKey = { kid, alg: 'ed25519', key: page.privateKey };

  const unsigned = await call(url, 'GET', '/v1/decisions', onSession(token, origin, null));
  t.match(unsigned.json, { status: 401, code: 'signature_required' }, 'the cookie alone reads nothing');
  t.equal((await call(url, 'GET', '/v1/decisions', onSession(token, origin, signer))).status, 200, 'signed with the session key it reads');
  const byOwnersKey = await call(url, 'GET', '/v1/decisions', onSession(token, origin, signers.get(reviewer.key)!));
  t.match(byOwnersKey.json, { status: 401, code: 'signature_invalid', check: 'unknown_key' }, "on the session, only the session's key verifies, not the owner's");
  const me = await call(url, 'GET', '/v1/sessions/current', onSession(token, origin, signer));
  t.match(me.json.session, { signingKey: { kid, authorisedBy: reviewer.kid } }, 'the session says which key it signs with and who vouched for it');

  const author = await productionReviewer(server, url, ['decisions:read', 'decisions:write'], 'prod author');
  const created = await call(url, 'POST', '/v1/decisions', {
    key: author.key,
    body: { title: 'Open port 22 to the bastion', policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 85 }] },
  });
  t.equal(created.status, 200, created.text);
  const approvePath = `/v1/decisions/${created.json.id}/approve`;
  const body = { comment: 'change ticket 4411' };
  const forged = await call(url, 'POST', approvePath, onSession(token, origin, null, { body }));
  t.match(forged.json, { status: 401, code: 'signature_required' }, 'an unsigned approval on the session is refused');
  const otherPage = pageKey();
  const wrongKey = await call(url, 'POST', approvePath, onSession(token, origin, { kid, alg: 'ed25519', key: otherPage.privateKey }, { body }));
  t.match(wrongKey.json, { status: 401, code: 'signature_invalid', check: 'bad_signature' }, 'so is one signed by another key under its keyid');

  const headers = { cookie: `${SESSION_COOKIE}=${token}`, 'x-gatehouse-csrf': '1', origin, 'content-type': 'application/json' };
  const raw = JSON.stringify(body);
  const signed = { ...headers, ...signRequest({ method: 'POST', url: url + approvePath, headers, body: raw }, signer) };
  const approved = await fetch(url + approvePath, { method: 'POST', headers: signed, body: raw });
  t.equal(approved.status, 200, 'signed with the session key, the approval passes the policy that requires a signature');
  t.equal(((await approved.json()) as { status: string }).status, 'approved');
  const replayed = await fetch(url + approvePath, { method: 'POST', headers: signed, body: raw });
  t.match(await replayed.json(), { status: 401, code: 'signature_invalid', check: 'replay' }, 'the same signed request again is a replay');

  const trace = await call(url, 'GET', `/v1/impact/trace?decision=${created.json.id}`, { key: admin });
  const entries = trace.json.entries.filter((e: { route: string }) => e.route === '/v1/decisions/{id}/approve');
  t.same(
    entries.map((e: { status: number; keyId: string; signature: object }) => [e.status, e.keyId, e.signature]),
    [
      [401, reviewer.id, { alg: null, failure: null, keyId: null, label: null, outcome: 'unsigned' }],
      [401, reviewer.id, { alg: 'ed25519', failure: 'bad_signature', keyId: kid, label: 'sig1', outcome: 'failed', session: true }],
      [200, reviewer.id, { alg: 'ed25519', failure: null, keyId: kid, label: 'sig1', outcome: 'verified', session: true }],
      [401, reviewer.id, { alg: 'ed25519', failure: 'replay', keyId: kid, label: 'sig1', outcome: 'failed', session: true }],
    ],
    'the audit log records each attempt under the key, and which were signed by the session key',
  );

  const fromSession = await call(url, 'POST', '/v1/sessions/codes', onSession(token, origin, signer));
  t.equal(fromSession.status, 400, 'a session cannot ask for codes: it would outlive itself');

  const ws = new WebSocket(wsUrl(url), { headers: { cookie: `${SESSION_COOKIE}=${token}`, origin } });
  t.teardown(() => ws.terminate());
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
  });
  t.pass('the stream, which a browser cannot sign, opens with the cookie');
  ws.close();

  const out = await call(url, 'DELETE', '/v1/sessions/current', onSession(token, origin, null));
  t.equal(out.status, 204, 'signing out needs no signature: a page that lost its key can still end its session');
  const after = await call(url, 'GET', '/v1/decisions', onSession(token, origin, signer));
  t.equal(after.status, 401, 'after sign-out the session key signs for nothing');
  t.equal(after.json.code, 'unauthenticated');
  t.equal(server.services.sessions.codes.db.getCount(), 0, 'no code is left');
});

t.test('a code expires and is redeemed once; the session ends with the signing key that vouched for it', async (t) => {
  const { url, server, reviewer, origin } = await setup(t);
  const { codes } = server.services.sessions;

  const code = await signInCode(url, reviewer.key);
  const [a, b] = await Promise.all([redeem(url, code, pageKey().jwk), redeem(url, code, pageKey().jwk)]);
  t.same([a.status, b.status].sort(), [201, 409], 'two redemptions at once: one session, one conflict');

  const stale = await signInCode(url, reviewer.key);
  t.throws(() => codes.find(stale, Date.now() + SESSION_CODE_TTL_MS + 1000), { code: 'unauthenticated' }, 'a code is worth 5 minutes');
  t.equal(await server.services.sessions.purgeExpired(Date.now() + SESSION_CODE_TTL_MS + 1000), 1, 'and is purged after');
  t.equal((await redeem(url, stale, pageKey().jwk)).status, 401, 'a purged code is unknown');

  const { token, signer } = await keyBoundSession(url, reviewer.key);
  t.equal((await call(url, 'GET', '/v1/decisions', onSession(token, origin, signer))).status, 200);
  const revoked = await call(url, 'DELETE', `/v1/keys/${reviewer.id}/signing-keys/${reviewer.kid}`, { key: reviewer.key });
  t.equal(revoked.status, 200, revoked.text);
  const after = await call(url, 'GET', '/v1/decisions', onSession(token, origin, signer));
  t.match(after.json, { status: 401, code: 'unauthenticated', detail: new RegExp(`signing key ${reviewer.kid}`) }, 'revoking the signing key ends the sessions it let in');
  t.match(after.headers.get('set-cookie'), /^gatehouse_session=; Path=\/; Max-Age=0/, 'and the browser is told to forget the cookie');
});

t.test('gatehouse sessions code: the command asks for a code with the key\'s signature, and the page redeems it', async (t) => {
  const { url, reviewer } = await setup(t);
  const signer = signers.get(reviewer.key)!;
  const dir = tempDir(t);
  const keyFile = join(dir, 'signing-key.jwk');
  writeFileSync(keyFile, JSON.stringify({ ...signer.key.export({ format: 'jwk' }), kid: signer.kid }), { mode: 0o600 });
  const env = { GATEHOUSE_API_KEY: reviewer.key, GATEHOUSE_URL: url };

  const asked = await gatehouse(['sessions', 'code', '--signing-key', keyFile], { env });
  t.equal(asked.code, 0, asked.stderr);
  const code = asked.stdout.trim();
  t.match(code, /^ghc_[\w-]+$/, 'the code alone on stdout');
  t.match(asked.stderr, new RegExp(`paste it into the sign-in field of ${url}/console`));
  const redeemed = await redeem(url, code, pageKey().jwk);
  t.equal(redeemed.status, 201, redeemed.text);
  t.match(redeemed.json, { keyId: reviewer.id, session: { signingKey: { authorisedBy: signer.kid } } }, 'a session for the key, vouched for by the signing key the command signed with');

  const pem = join(dir, 'signing-key.pem');
  writeFileSync(pem, signer.key.export({ format: 'pem', type: 'pkcs8' }) as string, { mode: 0o600 });
  const fromPem = await gatehouse(['sessions', 'code', '--signing-key', pem, '--kid', signer.kid], { env });
  t.equal(fromPem.code, 0, `a PEM key with --kid works too: ${fromPem.stderr}`);

  const otherKey = join(dir, 'other.jwk');
  writeFileSync(otherKey, JSON.stringify({ ...generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }), kid: signer.kid }));
  const forged = await gatehouse(['sessions', 'code', '--signing-key', otherKey], { env });
  t.equal(forged.code, 1, 'a key that is not the registered one is refused by the server');
  t.match(forged.stderr, /the server refused: 401/);

  const noKey = await gatehouse(['sessions', 'code', '--signing-key', keyFile], { env: { GATEHOUSE_API_KEY: '', GATEHOUSE_URL: url } });
  t.equal(noKey.code, 2);
  t.match(noKey.stderr, /set GATEHOUSE_API_KEY/);
  const noKid = await gatehouse(['sessions', 'code', '--signing-key', pem], { env });
  t.equal(noKid.code, 2);
  t.match(noKid.stderr, /--kid is needed/);
});
