import t from 'tap';
import { DecisionStore } from '../core/decision-store.ts';
import { DecisionWorkflow } from '../core/decision-workflow.ts';
import { GatehouseError } from '../core/errors.ts';
import { KeyReview } from '../core/key-review.ts';
import { KeyRegistry, type KeyRecord } from '../core/keys.ts';
import { UNSIGNED, type RequestFacts } from '../core/policy-input.ts';
import type { Principal } from '../core/principal.ts';
import { Store } from '../core/store.ts';
import { tempDir } from './helpers/gatehouse.ts';
import { bundledEngine } from './helpers/policies.ts';

// The production key review, in core, against the real security-review-v1 policy. Production
// requests must be signed; these requests carry the facts the signature stage produces for a
// verified signature (test/production-key-review.test.ts runs the same review over HTTP).
// Compiling the bundled policies can take a while on a cold cache.
t.setTimeout(600_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

const signed: RequestFacts = {
  method: 'POST',
  path: '/v1/decisions/review/approve',
  signature: { verified: true, keyId: 'admin-signing-key', alg: 'ed25519', label: 'sig1', covered: ['@method', '@target-uri', 'content-digest'] },
};
const unsigned: RequestFacts = { ...signed, signature: UNSIGNED };
const adminA: Principal = { keyId: 'key_admin_a', env: 'production', scopes: ['admin'], roles: ['security'] };
const adminB: Principal = { keyId: 'key_admin_b', env: 'production', scopes: ['admin'], roles: ['security'] };
const operator: Principal = { keyId: 'key_ops', env: 'production', scopes: ['decisions:approve'], roles: [] };

/** Opens the review as POST /v1/keys does: draft, policy check, create. */
function openReview(workflow: DecisionWorkflow, review: KeyReview, key: KeyRecord, principal: Principal, request: RequestFacts) {
  const draft = workflow.draft('production', principal, review.reviewRequest(key), { type: 'key', id: key.id });
  const decision = workflow.applyCreate(draft, workflow.check('create', draft, principal, request));
  return { decision, key: { ...key, reviewDecisionId: decision.id } };
}

t.test('a second admin approving the review activates the key', async (t) => {
  const store = Store.open({ dataDir: tempDir(t) });
  t.teardown(() => store.close());
  const keys = new KeyRegistry(store);
  const workflow = new DecisionWorkflow(new DecisionStore(store), engine);
  const review = new KeyReview(keys, workflow);

  const issued = keys.draft({ env: 'production', scopes: ['decisions:read'], createdBy: adminA.keyId });
  t.equal(issued.record.status, 'pending_review');
  t.throws(() => openReview(workflow, review, issued.record, adminA, unsigned), { code: 'policy_denied' }, 'an unsigned request cannot open a review');

  const opened = openReview(workflow, review, issued.record, adminA, signed);
  t.match(opened.decision, { policy: 'security-review-v1', gate: 'security_review', nextAction: 'approve', subject: { type: 'key', id: issued.record.id } });
  t.equal(opened.key.reviewDecisionId, opened.decision.id);
  await store.commit(() => {
    keys.write(opened.key);
    workflow.write(opened.decision);
  });

  t.throws(() => workflow.check('approve', opened.decision, operator, signed), { code: 'insufficient_scope' }, 'only admins act on reviews');
  const own = workflow.check('approve', opened.decision, adminA, signed);
  t.notOk(own.verdict.allow, 'the admin who opened it may not approve it');
  t.throws(() => workflow.applyAction('approve', opened.decision, adminA, own, null), GatehouseError);

  const check = workflow.check('approve', opened.decision, adminB, signed);
  t.ok(check.verdict.allow, check.verdict.reasons.join('; '));
  const { record } = workflow.applyAction('approve', opened.decision, adminB, check, 'checked the scopes');
  t.equal(record.status, 'approved');
  t.equal(keys.get(issued.record.id)!.status, 'pending_review', 'nothing changes before the commit');
  await store.commit(() => workflow.write(record));
  t.equal(keys.get(issued.record.id)!.status, 'active', 'the approval activated the key');
  t.throws(() => workflow.check('execute', record, adminB, signed), { code: 'invalid_transition' }, 'nothing to execute afterwards');
});

t.test('a rejected review leaves the key rejected', async (t) => {
  const store = Store.open({ dataDir: tempDir(t) });
  t.teardown(() => store.close());
  const keys = new KeyRegistry(store);
  const workflow = new DecisionWorkflow(new DecisionStore(store), engine);
  const review = new KeyReview(keys, workflow);
  const issued = keys.draft({ env: 'production', scopes: ['admin'], createdBy: adminA.keyId });
  const opened = openReview(workflow, review, issued.record, adminA, signed);
  await store.commit(() => {
    keys.write(opened.key);
    workflow.write(opened.decision);
  });
  const check = workflow.check('reject', opened.decision, adminB, signed);
  const { record } = workflow.applyAction('reject', opened.decision, adminB, check, 'too broad');
  await store.commit(() => workflow.write(record));
  t.equal(record.status, 'rejected');
  t.equal(keys.get(issued.record.id)!.status, 'rejected');
});
