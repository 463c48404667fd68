import t from 'tap';
import { AuditLog } from '../core/audit-log.ts';
import { DecisionStore } from '../core/decision-store.ts';
import { Store } from '../core/store.ts';
import { call, issueKey, tempDir, type Answer } from './helpers/gatehouse.ts';
import { startServe } from './helpers/serve-process.ts';

// A 200 means the decision and its audit entry are committed: a server killed with SIGKILL the
// moment it answered has lost neither.

// Compiling the bundled policies can take a while on a cold cache.
t.setTimeout(600_000);

t.test('answered decisions survive SIGKILL', async (t) => {
  const dataDir = tempDir(t);
  const adminKey = 'durability-test-admin-key-0123456789';
  const served = await startServe(['--data-dir', dataDir], { GATEHOUSE_ADMIN_KEY: adminKey });
  t.teardown(() => served.child.kill('SIGKILL'));
  const key = await issueKey(served.url, adminKey, { env: 'sandbox', scopes: ['decisions:write'] });

  const answered: Answer[] = [];
  let killed = false;
  const body = (i: number) => ({ title: `durable ${i}`, policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: i }] });
  const requests = Array.from({ length: 60 }, (_, i) =>
    call(served.url, 'POST', '/v1/decisions', { key: key.key, body: body(i) }).then(
      (answer) => {
        if (killed) return;
        answered.push(answer);
        // Kill as soon as a handful have been answered, with the rest still in flight.
        if (answered.length === 10) {
          killed = true;
          served.child.kill('SIGKILL');
        }
      },
      () => {},
    ),
  );
  await Promise.all(requests);
  const { signal } = await served.exited;
  t.equal(signal, 'SIGKILL');
  t.ok(answered.length >= 10, `${answered.length} answered before the kill`);

  const store = Store.open({ dataDir });
  t.teardown(() => store.close());
  const decisions = new DecisionStore(store);
  const audit = new AuditLog(store);
  const entries = [...audit.all()];
  for (const answer of answered) {
    t.equal(answer.status, 200);
    t.ok(decisions.get('sandbox', answer.json.id), `decision ${answer.json.id} is stored`);
    t.ok(entries.some((e) => e.decisionId === answer.json.id && e.status === 200), `and its audit entry`);
  }
  t.ok(audit.verify().ok, 'the chain is intact after the kill');
});
