import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { AuditLog, entryHash, GENESIS, type AuditEntry } from '../core/audit-log.ts';
import { Store } from '../core/store.ts';
import { call, issueKey, startTestServer, tempDir } from './helpers/gatehouse.ts';

const run = promisify(execFile);
const BIN = new URL('../bin/gatehouse.js', import.meta.url).pathname;

t.test('every /v1 call appends one entry, refusals included', async (t) => {
  const { url, admin, server } = await startTestServer(t);
  const { audit } = server.services;
  const start = audit.tail().seq;
  t.equal(start, 1, 'the bootstrap admin key was recorded');
  const reader = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  await call(url, 'GET', '/v1/decisions', { key: reader.key, headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } });
  await call(url, 'GET', '/v1/decisions');
  await call(url, 'GET', '/v1/decisions', { key: 'gh_test_unknown' });
  await call(url, 'POST', '/v1/keys', { key: reader.key, body: {} });
  await call(url, 'GET', '/nowhere');
  await call(url, 'GET', '/healthz');
  await call(url, 'GET', '/metrics');
  const entries = [...audit.all()].slice(start);
  t.same(
    entries.map((e) => [e.method, e.route, e.status, e.code, e.keyId === null]),
    [
      ['POST', '/v1/keys', 201, null, false],
      ['GET', '/v1/decisions', 200, null, false],
      ['GET', '/v1/decisions', 401, 'unauthenticated', true],
      ['GET', '/v1/decisions', 401, 'unauthenticated', true],
      ['POST', '/v1/keys', 403, 'insufficient_scope', false],
      ['GET', 'unmatched', 404, 'not_found', true],
    ],
    'one entry per call; the ops probes are not recorded',
  );
  const read = entries[1]!;
  t.equal(read.keyId, reader.id);
  t.equal(read.env, 'sandbox');
  t.equal(read.traceparent, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
  t.match(read.requestId, /^req_/);
  t.ok(audit.verify().ok);
});

t.test('the chain detects tampering', async (t) => {
  const dataDir = tempDir(t);
  const { url, admin, server } = await startTestServer(t, { dataDir });
  for (let i = 0; i < 5; i++) await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  await server.close();

  const intact = await run(process.execPath, [BIN, 'audit', 'verify', '--data-dir', dataDir]);
  t.match(intact.stdout, /audit chain intact: 6 entries/);

  const exported = join(dataDir, 'audit.ndjson');
  await run(process.execPath, [BIN, 'audit', 'export', '--out', exported, '--data-dir', dataDir]);
  const records = readFileSync(exported, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as AuditEntry & { type?: string });
  t.same(records.slice(0, 2).map((r) => r.type), ['gatehouse-audit-export', 'checkpoint'], 'a header, then the checkpoint signed at shutdown');
  const lines = records.filter((r) => r.type === undefined);
  t.equal(lines.length, 6);
  t.equal(lines[0]!.prevHash, GENESIS);
  t.ok(lines.every((e, i) => i === 0 || e.prevHash === lines[i - 1]!.hash), 'each entry links to the one before');

  const store = Store.open({ dataDir });
  const entries = store.database<AuditEntry, number>('audit');
  const original = entries.get(4)!;
  entries.putSync(4, { ...original, status: 500 });
  t.same(new AuditLog(store).verify().broken, { seq: 4, reason: 'contents do not match the entry hash' });

  // Rehashing the edited entry does not help: the next one still points at the original.
  const { hash: _hash, ...rest } = { ...original, status: 500 };
  entries.putSync(4, { ...rest, hash: entryHash(rest) });
  t.same(new AuditLog(store).verify().broken, { seq: 5, reason: 'prevHash does not match the hash of entry 4' });

  entries.putSync(4, original);
  entries.removeSync(3);
  t.match(new AuditLog(store).verify().broken, { seq: 4, reason: /expected entry 3/ }, 'a removed entry leaves a gap');
  await store.close();

  const broken = await run(process.execPath, [BIN, 'audit', 'verify', '--data-dir', dataDir]).catch((e) => e);
  t.equal(broken.code, 1);
  t.match(broken.stderr, /audit chain broken at entry 4/);
});
