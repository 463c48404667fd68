import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import {
  AuthenticationError,
  ConflictError,
  GatehouseClient,
  NotFoundError,
  PermissionError,
  PolicyDeniedError,
  RateLimitedError,
  UnknownPolicyError,
  type Trace,
} from '../index.ts';
import { bundledEngine } from './helpers/policies.ts';
import { startTestServer } from './helpers/gatehouse.ts';

// Compiling the bundled policies can take a while on a cold cache.
t.setTimeout(600_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

const scopes = ['decisions:read', 'decisions:write', 'decisions:approve', 'decisions:execute', 'impact:read'] as const;

t.test('every route, typed results and typed errors', async (t) => {
  const { url, admin, adminSigner } = await startTestServer(t, { policies: engine, rateLimits: { sandbox: { ratePerSecond: 0.1, burst: 40 } } });
  const operator = new GatehouseClient({ baseUrl: url, apiKey: admin, signer: adminSigner });
  t.ok(await operator.healthz());
  t.equal((await operator.readyz()).status, 'ready');
  const creatorKey = await operator.createKey({ env: 'sandbox', scopes: [...scopes], name: 'creator' });
  const approverKey = await operator.createKey({ env: 'sandbox', scopes: [...scopes], name: 'approver' });
  t.match(creatorKey, { key: /^gh_test_/, status: 'active' });
  t.ok((await operator.listKeys('sandbox')).some((k) => k.id === creatorKey.id));

  const creator = new GatehouseClient({ baseUrl: url, apiKey: creatorKey.key });
  const approver = new GatehouseClient({ baseUrl: url, apiKey: approverKey.key });
  const decision = await creator.createDecision({ title: 'Rotate creds', policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 88 }] });
  t.equal(decision.label, 'human_approval:approve', 'the combined gate:nextAction label');
  t.equal((await creator.getDecision(decision.id)).label, 'human_approval:approve');
  t.equal((await approver.approveDecision(decision.id, { comment: 'ok' })).label, 'human_approval:execute');
  t.equal((await approver.executeDecision(decision.id)).status, 'executed');
  const trace = (await creator.getTrace(decision.auditTrail)) as Trace;
  t.equal(trace.entries.length, 4);

  const second = await creator.createDecision({ title: 'Tiny', policy: 'decision-gate-v1', context: 'routine' });
  t.equal(second.label, 'auto:execute');
  t.equal((await creator.cancelDecision(second.id)).status, 'cancelled');
  const third = await creator.createDecision({ title: 'Risky', policy: 'decision-gate-v1', context: [{ source: 'risk:blast_radius', value: 99 }] });
  t.equal((await approver.rejectDecision(third.id, { comment: 'no' })).status, 'rejected');

  const ids: string[] = [];
  for await (const d of creator.decisions({ limit: 1 })) ids.push(d.id);
  t.same(ids, [decision.id, second.id, third.id], 'the iterator follows cursors');
  t.same((await creator.listDecisions({ status: 'cancelled' })).data.map((d) => d.id), [second.id]);

  await t.rejects(new GatehouseClient({ baseUrl: url, apiKey: 'gh_test_bogus' }).getDecision(decision.id), AuthenticationError);
  await t.rejects(creator.listKeys(), PermissionError);
  await t.rejects(creator.getDecision('dec_missing0000'), NotFoundError);
  await t.rejects(creator.createDecision({ title: 'x', policy: 'nope-v1', context: 'x' }), UnknownPolicyError);
  await t.rejects(creator.approveDecision(decision.id), ConflictError);
  const denied = await creator.createDecision({ title: 'x', policy: 'spend-approval-v1', context: 'no amount' }).catch((e) => e);
  t.type(denied, PolicyDeniedError);
  t.ok(denied.reasons.includes('the context must carry a numeric finance:amount'));
  t.match(denied.auditTrail, /^trace_/);
  t.equal(((await creator.getTrace(denied.auditTrail)) as Trace).entries[0]!.status, 403);
  const revoked = await operator.revokeKey(approverKey.id);
  t.equal(revoked.status, 'revoked');
  await t.rejects(approver.getDecision(decision.id), AuthenticationError);

  const hasty = new GatehouseClient({ baseUrl: url, apiKey: creatorKey.key, retries: 0 });
  let limited: unknown;
  for (let i = 0; i < 60 && !limited; i++) limited = await hasty.getDecision(decision.id).then(() => undefined, (e) => e);
  t.type(limited, RateLimitedError);
  t.ok((limited as RateLimitedError).retryAfterSeconds >= 1);
});

t.test('retries after a lost response reuse the Idempotency-Key', async (t) => {
  const { url, admin, adminSigner } = await startTestServer(t, { policies: engine });
  const operator = new GatehouseClient({ baseUrl: url, apiKey: admin, signer: adminSigner });
  const creatorKey = await operator.createKey({ env: 'sandbox', scopes: [...scopes] });

  // A proxy that forwards everything but loses the answer to the first decision it sees.
  const upstream = new URL(url);
  const seenKeys: string[] = [];
  let dropped = false;
  const proxy = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'POST' && req.url === '/v1/decisions') seenKeys.push(String(req.headers['idempotency-key']));
    const forward = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      if (req.method === 'POST' && req.url === '/v1/decisions' && !dropped) {
        dropped = true;
        answer.resume();
        answer.on('end', () => res.destroy());
        return;
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => proxy.close(resolve)));
  const through = new GatehouseClient({ baseUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, apiKey: creatorKey.key, retryDelayMs: 10 });

  const decision = await through.createDecision({ title: 'Once', policy: 'decision-gate-v1', context: 'x' });
  t.equal(seenKeys.length, 2, 'the first answer was lost, the client retried');
  t.equal(seenKeys[0], seenKeys[1], 'with the same Idempotency-Key');
  const all = await new GatehouseClient({ baseUrl: url, apiKey: creatorKey.key }).listDecisions();
  t.same(all.data.map((d) => d.id), [decision.id], 'and only one decision exists');
});
