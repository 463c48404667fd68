import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import type { OpaDecisionEvent } from '../core/opa-decision-log.ts';
import { bundledEngine } from './helpers/policies.ts';
import { call, issueKey, startTestServer, tempDir } from './helpers/gatehouse.ts';

// `gatehouse audit export --format opa`: the policy evaluations of a real server's audit log as
// OPA decision-log events.

t.setTimeout(600_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

const run = promisify(execFile);
const BIN = new URL('../bin/gatehouse.js', import.meta.url).pathname;
const SCOPES = ['decisions:read', 'decisions:write', 'decisions:approve', 'decisions:execute'];
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

t.test('every policy evaluation becomes one OPA decision-log event, and nothing else does', async (t) => {
  const dataDir = tempDir(t);
  const { url, admin, server } = await startTestServer(t, { policies: engine, dataDir });
  const creator = await issueKey(url, admin, { env: 'sandbox', scopes: SCOPES, name: 'creator' });
  const approver = await issueKey(url, admin, { env: 'sandbox', scopes: SCOPES, name: 'approver' });
  const body = { title: 'Deploy with risk 90', policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 90 }] };
  const created = await call(url, 'POST', '/v1/decisions', { key: creator.key, body, headers: { traceparent: TRACEPARENT } });
  t.equal(created.status, 200, created.text);
  const id = created.json.id as string;
  const own = await call(url, 'POST', `/v1/decisions/${id}/approve`, { key: creator.key });
  t.equal(own.status, 403, 'the creator may not approve their own decision');
  const approved = await call(url, 'POST', `/v1/decisions/${id}/approve`, { key: approver.key });
  t.equal(approved.status, 200, approved.text);
  await call(url, 'GET', `/v1/decisions/${id}`, { key: creator.key });
  const entries = [...server.services.audit.all()];
  await server.close();

  const out = join(dataDir, 'decisions.ndjson');
  const exported = await run(process.execPath, [BIN, 'audit', 'export', '--format', 'opa', '--out', out, '--data-dir', dataDir]);
  t.match(exported.stderr, /exported 3 decisions to /);
  const events = readFileSync(out, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as OpaDecisionEvent);
  t.equal(events.length, 3, 'the create and both approvals; key issues and reads asked no policy');
  const evaluated = entries.filter((e) => e.policy !== null);
  t.same(events.map((e) => e.decision_id), evaluated.map((e) => e.requestId), 'decision_id is the request id of the audited call');

  const [create, refused, approval] = events as [OpaDecisionEvent, OpaDecisionEvent, OpaDecisionEvent];
  t.match(create, {
    decision_id: /^req_/,
    path: 'decision-gate-v1',
    input: { principal: { keyId: creator.id, env: 'sandbox' }, request: { method: 'POST', path: '/v1/decisions' }, decision: { id } },
    result: { allow: true, gate: 'human_approval', error: null },
    timestamp: evaluated[0]!.at,
    labels: { app: 'gatehouse', version: /^\d+\.\d+\.\d+/, audit_seq: String(evaluated[0]!.seq), audit_hash: evaluated[0]!.hash, input_digest: evaluated[0]!.inputDigest!, status: '200' },
    bundles: { 'decision-gate-v1': { revision: /^sha256:/ } },
    requested_by: creator.id,
    trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
    span_id: '00f067aa0ba902b7',
  });
  t.match(refused, { input: { request: { path: `/v1/decisions/${id}/approve` } }, result: { allow: false }, labels: { status: '403' } });
  t.notOk('trace_id' in refused, 'no traceparent, no trace id');
  t.match(approval, { requested_by: approver.id, result: { allow: true } });
  t.ok(events.every((e) => Date.parse(e.timestamp) > 0), 'timestamps are RFC 3339');

  const stdout = await run(process.execPath, [BIN, 'audit', 'export', '--format', 'opa', '--data-dir', dataDir]);
  t.equal(stdout.stdout, readFileSync(out, 'utf8'), 'stdout carries the same lines');
  await t.rejects(run(process.execPath, [BIN, 'audit', 'export', '--format', 'xml', '--data-dir', dataDir]), { code: 2 }, 'an unknown format is a usage error');
});
