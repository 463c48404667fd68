import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { call, issueKey, startTestServer } from './helpers/gatehouse.ts';

const run = promisify(execFile);
const BIN = new URL('../bin/gatehouse.js', import.meta.url).pathname;

t.test('issue, list and revoke keys', async (t) => {
  const { url, admin, dataDir, server } = await startTestServer(t);
  t.match(admin, /^gh_live_/, 'the bootstrap admin key was generated');

  const created = await call(url, 'POST', '/v1/keys', {
    key: admin,
    body: { env: 'sandbox', scopes: ['decisions:read', 'decisions:write'], name: 'ci', roles: ['finance-approver'] },
  });
  t.equal(created.status, 201);
  t.match(created.json, {
    id: /^key_/,
    key: /^gh_test_[A-Za-z0-9_-]{43}$/,
    env: 'sandbox',
    scopes: ['decisions:read', 'decisions:write'],
    roles: ['finance-approver'],
    name: 'ci',
    status: 'active',
    review: null,
  });
  await server.services.store.root.flushed;
  const file = readFileSync(join(dataDir, 'gatehouse.mdb'));
  t.notOk(file.includes(Buffer.from(created.json.key)), 'the secret is not stored');

  const usable = await call(url, 'GET', '/v1/decisions', { key: created.json.key });
  t.equal(usable.status, 200, 'a sandbox key works at once');
  t.equal(usable.headers.get('ratelimit-limit'), '200', 'with the sandbox burst');

  const listed = await call(url, 'GET', '/v1/keys', { key: admin });
  t.equal(listed.status, 200);
  const mine = listed.json.data.find((k: { id: string }) => k.id === created.json.id);
  t.ok(mine, 'the new key is listed');
  t.notOk('key' in mine || 'hash' in mine, 'without secret or hash');
  t.same(
    (await call(url, 'GET', '/v1/keys?env=sandbox', { key: admin })).json.data.map((k: { env: string }) => k.env),
    ['sandbox'],
  );

  const revoked = await call(url, 'DELETE', `/v1/keys/${created.json.id}`, { key: admin });
  t.equal(revoked.status, 200);
  t.equal(revoked.json.status, 'revoked');
  const refused = await call(url, 'GET', '/v1/decisions', { key: created.json.key });
  t.equal(refused.status, 401, 'a revoked key is refused at once');
  t.match(refused.json.detail, /revoked/);
  t.equal((await call(url, 'DELETE', `/v1/keys/${created.json.id}`, { key: admin })).status, 409, 'revoking twice conflicts');
  t.equal((await call(url, 'DELETE', '/v1/keys/key_missing', { key: admin })).status, 404);
});

t.test('scopes are enforced on every route', async (t) => {
  const { url, admin } = await startTestServer(t);
  const reader = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  const routes: [string, string, string, unknown?][] = [
    ['POST', '/v1/decisions', 'decisions:write', { title: 'x', policy: 'p', context: 'c' }],
    ['POST', '/v1/decisions/dec_x/approve', 'decisions:approve'],
    ['POST', '/v1/decisions/dec_x/reject', 'decisions:approve'],
    ['POST', '/v1/decisions/dec_x/execute', 'decisions:execute'],
    ['POST', '/v1/decisions/dec_x/cancel', 'decisions:write'],
    ['GET', '/v1/impact/trace?ref=trace_x', 'impact:read'],
    ['POST', '/v1/keys', 'admin', { env: 'sandbox', scopes: ['admin'] }],
    ['GET', '/v1/keys', 'admin'],
    ['DELETE', '/v1/keys/key_x', 'admin'],
  ];
  for (const [method, path, scope, body] of routes) {
    const answer = await call(url, method, path, { key: reader.key, ...(body ? { body } : {}) });
    t.equal(answer.status, 403, `${method} ${path} needs ${scope}`);
    t.equal(answer.json.code, 'insufficient_scope');
    t.equal(answer.json.required, scope);
    t.match(answer.headers.get('www-authenticate'), `scope="${scope}"`);
  }
  t.equal((await call(url, 'GET', '/v1/decisions', { key: reader.key })).status, 200, 'the granted scope works');
  const writer = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:write'] });
  t.equal((await call(url, 'GET', '/v1/decisions/dec_x', { key: writer.key })).status, 403, 'write does not imply read');
});

t.test('environments do not see each other', async (t) => {
  const { url, admin } = await startTestServer(t);
  const sandboxAdmin = await issueKey(url, admin, { env: 'sandbox', scopes: ['admin'] });
  const refused = await call(url, 'POST', '/v1/keys', { key: sandboxAdmin.key, body: { env: 'production', scopes: ['decisions:read'] } });
  t.equal(refused.status, 403, 'a sandbox admin cannot issue production keys');
  t.equal(refused.json.code, 'forbidden');
  const seen = await call(url, 'GET', '/v1/keys', { key: sandboxAdmin.key });
  t.ok(seen.json.data.every((k: { env: string }) => k.env === 'sandbox'), 'nor list them');
  const productionKeys = await call(url, 'GET', '/v1/keys?env=production', { key: admin });
  const bootstrap = productionKeys.json.data[0];
  t.equal((await call(url, 'DELETE', `/v1/keys/${bootstrap.id}`, { key: sandboxAdmin.key })).status, 404, 'nor revoke them');
});

t.test('the keys command works on the data directory, beside a running server', async (t) => {
  const { url, admin, dataDir } = await startTestServer(t);
  const { stdout } = await run(process.execPath, [BIN, 'keys', 'create', '--env', 'sandbox', '--scopes', 'decisions:read,impact:read', '--name', 'from-cli', '--data-dir', dataDir]);
  const issued = JSON.parse(stdout);
  t.match(issued, { id: /^key_/, key: /^gh_test_/, env: 'sandbox', status: 'active', scopes: ['decisions:read', 'impact:read'], name: 'from-cli' });
  t.equal((await call(url, 'GET', '/v1/decisions', { key: issued.key })).status, 200, 'the server accepts a key the CLI issued');

  const listed = await run(process.execPath, [BIN, 'keys', 'list', '--env', 'sandbox', '--data-dir', dataDir]);
  t.match(listed.stdout, issued.id);
  t.notMatch(listed.stdout, issued.key, 'list never shows secrets');

  await run(process.execPath, [BIN, 'keys', 'revoke', issued.id, '--data-dir', dataDir]);
  t.equal((await call(url, 'GET', '/v1/decisions', { key: issued.key })).status, 401, 'a CLI revocation takes effect at once');

  const bad = await run(process.execPath, [BIN, 'keys', 'create', '--env', 'sandbox', '--scopes', 'nope', '--data-dir', dataDir]).catch((e) => e);
  t.equal(bad.code, 2, 'unknown scopes are refused');
  t.equal((await call(url, 'GET', '/v1/keys', { key: admin })).status, 200);
  const verify = await run(process.execPath, [BIN, 'audit', 'verify', '--data-dir', dataDir]);
  t.match(verify.stdout, /audit chain intact/, 'CLI and server entries chain together');
});
