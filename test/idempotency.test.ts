import t from 'tap';
import { call, issueKey, startTestServer } from './helpers/gatehouse.ts';

// Idempotency-Key on a route that needs no policy: revoking keys. Decision creation is covered
// in decisions.test.ts with the bundled policies.

t.test('replay, mismatch and scope', async (t) => {
  const { url, admin } = await startTestServer(t);
  const target = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  const other = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  const headers = { 'idempotency-key': 'revoke-1' };

  const first = await call(url, 'DELETE', `/v1/keys/${target.id}`, { key: admin, headers });
  t.equal(first.status, 200);
  t.equal(first.headers.get('idempotent-replayed'), null);
  const again = await call(url, 'DELETE', `/v1/keys/${target.id}`, { key: admin, headers });
  t.equal(again.status, 200, 'the retry gets the first answer, not 409 already revoked');
  t.equal(again.text, first.text, 'byte for byte');
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  t.not(again.headers.get('request-id'), first.headers.get('request-id'), 'the retry is its own request');

  const mismatch = await call(url, 'DELETE', `/v1/keys/${other.id}`, { key: admin, headers });
  t.equal(mismatch.status, 422);
  t.equal(mismatch.json.code, 'idempotency_mismatch');
  const stillActive = await call(url, 'GET', '/v1/decisions', { key: other.key });
  t.equal(stillActive.status, 200, 'the mismatched request did nothing');

  // Keys are scoped per API key: another admin's "revoke-1" is a different request.
  const secondAdmin = await issueKey(url, admin, { env: 'sandbox', scopes: ['admin'] });
  const scoped = await call(url, 'DELETE', `/v1/keys/${other.id}`, { key: secondAdmin.key, headers });
  t.equal(scoped.status, 200);
  t.equal(scoped.headers.get('idempotent-replayed'), null);

  // Refusals the handler made are replayed too.
  const missing = await call(url, 'DELETE', '/v1/keys/key_none', { key: admin, headers: { 'idempotency-key': 'missing' } });
  const missingAgain = await call(url, 'DELETE', '/v1/keys/key_none', { key: admin, headers: { 'idempotency-key': 'missing' } });
  t.same([missing.status, missingAgain.status], [404, 404]);
  t.equal(missingAgain.text, missing.text);
  t.equal(missingAgain.headers.get('idempotent-replayed'), 'true');

  const badKey = await call(url, 'DELETE', `/v1/keys/${other.id}`, { key: admin, headers: { 'idempotency-key': 'x'.repeat(256) } });
  t.equal(badKey.status, 400);
  const notAccepted = await call(url, 'POST', '/v1/keys', { key: admin, headers: { 'idempotency-key': 'k' }, body: { env: 'sandbox', scopes: ['decisions:read'] } });
  t.equal(notAccepted.status, 400, 'key issuance refuses Idempotency-Key (its reply holds a secret that is never stored)');
});

t.test('concurrent identical requests act once', async (t) => {
  const { url, admin, server } = await startTestServer(t);
  const target = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  const before = server.services.audit.tail().seq;
  const answers = await Promise.all(
    Array.from({ length: 20 }, () => call(url, 'DELETE', `/v1/keys/${target.id}`, { key: admin, headers: { 'idempotency-key': 'same-moment' } })),
  );
  const fresh = answers.filter((a) => a.status === 200 && a.headers.get('idempotent-replayed') === null);
  const replayed = answers.filter((a) => a.headers.get('idempotent-replayed') === 'true');
  const inFlight = answers.filter((a) => a.status === 409);
  t.equal(fresh.length, 1, 'exactly one request acted');
  t.equal(replayed.length + inFlight.length, 19, 'the others were replayed or told it is in flight');
  t.ok(inFlight.every((a) => a.json.code === 'idempotency_in_flight'));
  t.ok(replayed.every((a) => a.text === fresh[0]!.text));
  t.equal(server.services.audit.tail().seq - before, 20, 'each call was audited');
});

t.test('records expire after the retention period', async (t) => {
  const { url, admin } = await startTestServer(t, { idempotencyRetentionMs: 150 });
  const target = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  const headers = { 'idempotency-key': 'short-lived' };
  t.equal((await call(url, 'DELETE', `/v1/keys/${target.id}`, { key: admin, headers })).status, 200);
  await new Promise((r) => setTimeout(r, 200));
  const later = await call(url, 'DELETE', `/v1/keys/${target.id}`, { key: admin, headers });
  t.equal(later.status, 409, 'once expired the key no longer replays; the request runs again');
  t.equal(later.json.code, 'conflict');
});
