import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { call, enrollSigner, startTestServer } from './helpers/gatehouse.ts';
import { bundledEngine } from './helpers/policies.ts';

// A production key from issue to its first signed decision, over HTTP against the bundled
// policies: issued pending_review → a security-review decision → approved by a second admin
// (signed) → active → it registers its first signing key → its signed decision succeeds, its
// unsigned one is 401 signature_required. Every step is in the audit log, and the review's steps
// are in the review decision's trace.

const run = promisify(execFile);
const BIN = new URL('../bin/gatehouse.js', import.meta.url).pathname;

// Compiling the bundled policies can take a while on a cold cache.
t.setTimeout(600_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

t.test('production key review end to end', async (t) => {
  const { url, admin, server, dataDir } = await startTestServer(t, { policies: engine });
  const { keys, audit } = server.services;
  // security-review-v1 wants an admin other than the one who opened the review. The second
  // security officer's key is issued by the operator at the command line (unsigned: the
  // operator holds the data directory, not a token) and approved by the bootstrap admin.
  const cli = await run(process.execPath, [BIN, 'keys', 'create', '--env', 'production', '--scopes', 'admin', '--roles', 'security', '--name', 'second admin', '--data-dir', dataDir]);
  const secondIssued = JSON.parse(cli.stdout) as { id: string; key: string; status: string; review: { decisionId: string } };
  t.equal(secondIssued.status, 'pending_review', 'the operator issues a production key pending review');
  const secondApproved = await call(url, 'POST', `/v1/decisions/${secondIssued.review.decisionId}/approve`, { key: admin, body: { comment: 'second security officer' } });
  t.equal(secondApproved.status, 200, 'the bootstrap admin approves what the operator opened');
  const second = { secret: secondIssued.key, record: keys.get(secondIssued.id)! };
  t.equal(second.record.status, 'active');
  await enrollSigner(url, second.secret, second.record.id);

  const issued = await call(url, 'POST', '/v1/keys', { key: admin, body: { env: 'production', scopes: ['decisions:read', 'decisions:write'], name: 'payments' } });
  t.equal(issued.status, 201);
  t.match(issued.json, { env: 'production', status: 'pending_review', key: /^gh_live_/, review: { decisionId: /^dec_/, auditTrail: /^trace_/ } });
  const { id, key: secret, review } = issued.json;

  const pending = await call(url, 'GET', '/v1/decisions', { key: secret });
  t.equal(pending.status, 401, 'a pending key is refused');
  t.match(pending.json.detail, /pending security review/);

  const reviewDecision = await call(url, 'GET', `/v1/decisions/${review.decisionId}`, { key: admin });
  t.match(reviewDecision.json, { policy: 'security-review-v1', gate: 'security_review', nextAction: 'approve', subject: { type: 'key', id } });
  const selfApproval = await call(url, 'POST', `/v1/decisions/${review.decisionId}/approve`, { key: admin, body: {} });
  t.equal(selfApproval.status, 403, 'the admin who opened the review may not approve it');
  const unsignedApproval = await call(url, 'POST', `/v1/decisions/${review.decisionId}/approve`, { key: second.secret, body: {}, signer: null });
  t.equal(unsignedApproval.json.code, 'signature_required', 'an unsigned approval is refused');
  const approved = await call(url, 'POST', `/v1/decisions/${review.decisionId}/approve`, { key: second.secret, body: { comment: 'scopes checked' } });
  t.equal(approved.status, 200);
  t.equal(approved.json.status, 'approved');
  t.equal(keys.get(id)!.status, 'active', 'the approval activated the key');

  const mustSign = await call(url, 'GET', '/v1/decisions', { key: secret });
  t.equal(mustSign.status, 401, 'an active production key must sign');
  t.match(mustSign.json, { code: 'signature_required', keyId: id, detail: new RegExp(`POST /v1/keys/${id}/signing-keys`) });
  const signer = await enrollSigner(url, secret, id);
  const again = await call(url, 'POST', `/v1/keys/${id}/signing-keys`, { key: secret, body: { jwk: { kty: 'OKP' } }, signer: null });
  t.equal(again.json.code, 'signature_required', 'only the first signing key may be registered unsigned');

  const body = { title: 'Rotate the payment gateway credentials', policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 20 }] };
  const decided = await call(url, 'POST', '/v1/decisions', { key: secret, body });
  t.equal(decided.status, 200, 'its signed decision is created');
  t.equal(decided.json.createdBy, id);
  const unsignedDecision = await call(url, 'POST', '/v1/decisions', { key: secret, body, signer: null });
  t.equal(unsignedDecision.status, 401);
  t.equal(unsignedDecision.json.code, 'signature_required');

  const trace = await call(url, 'GET', `/v1/impact/trace?ref=${review.auditTrail}`, { key: admin });
  t.equal(trace.status, 200);
  t.same(
    trace.json.entries.map((e: { method: string; route: string; status: number; keyId: string; signature?: { outcome: string } }) => [
      e.method,
      e.route,
      e.status,
      e.keyId,
      e.signature?.outcome,
    ]),
    [
      ['POST', '/v1/keys', 201, server.adminKey.id, 'verified'],
      ['GET', '/v1/decisions/{id}', 200, server.adminKey.id, 'verified'],
      ['POST', '/v1/decisions/{id}/approve', 403, server.adminKey.id, 'verified'],
      // Refused before the decision was read, and still on its trace: every attempt against a decision is.
      ['POST', '/v1/decisions/{id}/approve', 401, second.record.id, 'unsigned'],
      ['POST', '/v1/decisions/{id}/approve', 200, second.record.id, 'verified'],
    ],
    "the review's steps, in order, in its trace, the refused ones included",
  );
  t.match(trace.json.entries[0], { policy: 'security-review-v1', result: { allow: true, gate: 'security_review' } });

  const entries = [...audit.all()];
  const registration = entries.find((e) => e.keyId === id && e.route === '/v1/keys/{id}/signing-keys' && e.status === 201);
  t.match(registration, { signature: { outcome: 'bootstrap' } }, 'the first signing key was registered unsigned, and recorded so');
  t.ok(entries.some((e) => e.keyId === id && e.code === 'signature_required' && e.route === '/v1/decisions'), 'the unsigned decision is on record');
  t.match(
    entries.find((e) => e.decisionId === decided.json.id),
    { signature: { outcome: 'verified', keyId: signer.kid, alg: 'ed25519' } },
    'the signed decision names its signing key',
  );
  t.ok(audit.verify().ok);
});
