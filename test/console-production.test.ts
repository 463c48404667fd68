import t from 'tap';
import type { Request } from 'playwright-core';
import { SESSION_COOKIE } from '../proxy/http/session-cookie.ts';
import { freshPage, launchBrowser } from './helpers/browser.ts';
import { productionReviewer, signInCode } from './helpers/console-sessions.ts';
import { call, startTestServer } from './helpers/gatehouse.ts';
import { bundledEngine } from './helpers/policies.ts';

// The console in a real Chromium with a production key, which must sign every request (RFC 9421)
// and whose approvals the bundled policies refuse unsigned. The reviewer asks for a one-time code
// with the key's own signature, the page redeems it with a WebCrypto key pair it makes (private
// half non-extractable, held in memory), and signs each request with it. The approval is
// recorded as signed by the session key; the same request replayed with the cookie but no valid
// signature is refused; sign-out ends the session key; a reload leaves the page without it.

t.setTimeout(300_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

const REVIEWER = ['decisions:read', 'decisions:approve', 'stream:subscribe', 'impact:read'];

t.test('a production reviewer signs in with a code, approves with a signature made in the page, and signs out', async (t) => {
  const { url, admin, server } = await startTestServer(t, { policies: engine });
  const reviewer = await productionReviewer(server, url, REVIEWER, 'carol');
  const author = await productionReviewer(server, url, ['decisions:read', 'decisions:write'], 'dave');
  const origin = `http://${new URL(url).host}`;
  const create = async (title: string) => {
    const answer = await call(url, 'POST', '/v1/decisions', { key: author.key, body: { title, policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 88 }] } });
    if (answer.status !== 200) throw new Error(`create failed: ${answer.status} ${answer.text}`);
    return answer.json.id as string;
  };
  const browser = await launchBrowser(t);
  const { page, context, errors } = await freshPage(browser);

  await page.goto(`${url}/console`);
  await page.getByLabel('API key or sign-in code').fill(reviewer.key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: 'sign in with a one-time sign-in code' }).waitFor();
  t.pass('the production key itself is refused, and the page says how to sign in instead');

  const redeemed = page.waitForResponse((response) => response.url().endsWith('/v1/sessions/redeem'));
  await page.getByLabel('API key or sign-in code').fill(await signInCode(url, reviewer.key));
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Inbox', level: 1 }).waitFor();
  const signingKey = (await (await redeemed).json()).session.signingKey;
  t.match(signingKey, { alg: 'ed25519', authorisedBy: reviewer.kid }, "Chromium's WebCrypto made an Ed25519 key, vouched for by the reviewer's signing key");
  await page.getByText('Live', { exact: true }).waitFor();
  t.pass('the stream, which the page cannot sign, is live on the session cookie');
  const stored = await page.evaluate(async () => ({
    storage: JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }),
    databases: (await indexedDB.databases()).length,
  }));
  t.same(stored, { storage: '{}{}', databases: 0 }, 'no key material in localStorage, sessionStorage or IndexedDB');

  const id = await create('Rotate the production database password');
  const item = page.locator(`li[data-id="${id}"]`);
  await item.waitFor();
  t.pass('a decision created through the API appears live, read with signed requests');
  await item.getByRole('link', { name: 'Rotate the production database password' }).click();
  await page.getByRole('heading', { name: 'Rotate the production database password', level: 1 }).waitFor();

  const approval = page.waitForRequest((request) => request.method() === 'POST' && request.url().endsWith(`/v1/decisions/${id}/approve`));
  await page.getByLabel('Comment').fill('rotation window agreed');
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.getByRole('status').filter({ hasText: 'Approved. Status: approved.' }).waitFor();
  const sent: Request = await approval;
  const sentHeaders = await sent.allHeaders();
  t.match(sentHeaders['signature-input'], new RegExp(`^sig=\\("@method" "@target-uri" "content-digest"\\);created=\\d+;nonce="[\\w-]+";keyid="${signingKey.kid}";alg="ed25519"$`), 'the page signed the approval');

  const decision = await call(url, 'GET', `/v1/decisions/${id}`, { key: admin });
  t.match(decision.json, { status: 'approved', approvals: [{ keyId: reviewer.id, comment: 'rotation window agreed' }] }, 'the decision is approved by the reviewer');
  const trace = await call(url, 'GET', `/v1/impact/trace?decision=${id}`, { key: admin });
  const entry = trace.json.entries.find((e: { route: string }) => e.route === '/v1/decisions/{id}/approve');
  t.match(entry, { status: 200, keyId: reviewer.id, signature: { outcome: 'verified', keyId: signingKey.kid, alg: 'ed25519', session: true } }, 'and the audit log records it signed by the session key');

  const cookie = (await context.cookies()).find((c) => c.name === SESSION_COOKIE)!;
  const replay = async (path: string, headers: Record<string, string>) => {
    const response = await fetch(url + path, { method: 'POST', headers: { cookie: `${SESSION_COOKIE}=${cookie.value}`, 'x-gatehouse-csrf': '1', origin, 'content-type': 'application/json', ...headers }, body: sent.postData()! });
    return (await response.json()) as { status: number; code: string; check?: string };
  };
  const { 'signature-input': input, signature, 'content-digest': digest } = sentHeaders as Record<string, string>;
  t.match(await replay(`/v1/decisions/${id}/approve`, {}), { status: 401, code: 'signature_required' }, 'the request replayed with the cookie but unsigned is refused');
  t.match(await replay(`/v1/decisions/${id}/approve`, { 'signature-input': input!, signature: signature!, 'content-digest': digest! }), { status: 401, code: 'signature_invalid', check: 'replay' }, 'with its signature, it is a replay');
  const second = await create('Widen the payments firewall');
  t.match(await replay(`/v1/decisions/${second}/approve`, { 'signature-input': input!, signature: signature!, 'content-digest': digest! }), { status: 401, code: 'signature_invalid', check: 'bad_signature' }, 'aimed at another decision, the signature does not fit');
  t.equal((await call(url, 'GET', `/v1/decisions/${second}`, { key: admin })).json.approvals.length, 0, 'and nothing was approved');

  // A request signed by the page's key but not sent, to try once the session has ended.
  // The same module instance as the page's (one per URL), so it signs with the page's key.
  const SIGNING = '/console/request-signing.js';
  const presigned: Record<string, string> = await page.evaluate(async ([module, target]) => (await import(module!)).signatureHeaders('GET', target, null), [SIGNING, `${url}/v1/decisions`]);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
  const afterSignOut = await fetch(`${url}/v1/decisions`, { headers: { cookie: `${SESSION_COOKIE}=${cookie.value}`, origin, ...presigned } });
  t.equal(afterSignOut.status, 401, 'after sign-out a fresh signature by the session key is refused');
  t.match(await afterSignOut.json(), { code: 'unauthenticated' }, 'because the session, and its key with it, is gone');
  t.equal(await page.evaluate(async (module) => (await import(module)).hasSessionKey(), SIGNING), false, 'and the page holds no key');

  await page.getByLabel('API key or sign-in code').fill(await signInCode(url, reviewer.key));
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  await page.reload();
  await page.getByRole('status').filter({ hasText: 'its signing key went with that page' }).waitFor();
  t.notMatch(await page.locator('body').innerText(), /Rotate the production database password/, 'after a reload the key is gone: the page shows nothing and asks to sign in again');
  t.same(errors, [], 'no script errors');
});

t.test('where WebCrypto has no Ed25519, the page signs with ECDSA P-256', async (t) => {
  const { url, server } = await startTestServer(t, { policies: engine });
  const reviewer = await productionReviewer(server, url, REVIEWER, 'erin');
  const browser = await launchBrowser(t);
  const { page, errors } = await freshPage(browser);
  // As in a browser that predates Ed25519 in WebCrypto: asking for it fails.
  await page.addInitScript(() => {
    const generateKey = crypto.subtle.generateKey.bind(crypto.subtle);
    crypto.subtle.generateKey = ((algorithm: { name?: string }, ...rest: [boolean, KeyUsage[]]) =>
      algorithm.name === 'Ed25519' ? Promise.reject(new DOMException('Unrecognized name', 'NotSupportedError')) : generateKey(algorithm as EcKeyGenParams, ...rest)) as typeof crypto.subtle.generateKey;
  });
  const redeemed = page.waitForResponse((response) => response.url().endsWith('/v1/sessions/redeem'));
  const listed = page.waitForResponse((response) => new URL(response.url()).pathname === '/v1/decisions');
  await page.goto(`${url}/console`);
  await page.getByLabel('API key or sign-in code').fill(await signInCode(url, reviewer.key));
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText('No decisions match.').waitFor();
  t.match((await (await redeemed).json()).session.signingKey, { alg: 'ecdsa-p256-sha256' }, 'the session key is P-256');
  const list = await listed;
  t.equal(list.status(), 200, 'and the inbox reads with requests signed by it');
  t.match(await list.request().headerValue('signature-input'), /alg="ecdsa-p256-sha256"$/);
  t.same(errors, []);
});
