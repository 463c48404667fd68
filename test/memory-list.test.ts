import t, { type Test } from 'tap';
import { call, issueKey, startTestServer, type Answer } from './helpers/gatehouse.ts';

// GET /v1/memory/{namespace:key} and GET /v1/memory (filters, cursor paging) over HTTP: a real
// server, real LMDB, the offline word vectors.

t.setTimeout(120_000);

async function setup(t: Test) {
  const { url, admin } = await startTestServer(t);
  const writer = await issueKey(url, admin, { env: 'sandbox', scopes: ['memory:read', 'memory:write'] });
  const other = await issueKey(url, admin, { env: 'sandbox', scopes: ['memory:read', 'memory:write'] });
  const as = (key: { key: string }) => (method: string, path: string, body?: unknown) => call(url, method, path, { key: key.key, ...(body === undefined ? {} : { body }) });
  return { url, admin, writer, other, as };
}

const ok = (t: Test, answer: Answer, expected: number, what: string) => {
  t.equal(answer.status, expected, `${what}: ${answer.status === expected ? 'ok' : answer.text}`);
  return answer.json;
};

t.test('an item is read, listed by version and deleted by namespace:key as by its id', async (t) => {
  const { writer, as } = await setup(t);
  const first = ok(t, await as(writer)('POST', '/v1/memory', { namespace: 'repo', key: 'web', text: 'the web repository' }), 201, 'write');
  const second = ok(t, await as(writer)('POST', '/v1/memory', { namespace: 'repo', key: 'web', text: 'the web repository, moved' }), 201, 'write again');
  const nested = ok(t, await as(writer)('POST', '/v1/memory', { namespace: 'docs', key: 'runbooks/deploy', text: 'how to deploy' }), 201, 'write a key with a slash');

  t.same(ok(t, await as(writer)('GET', '/v1/memory/repo:web'), 200, 'by label'), second, 'the latest version, as by id');
  t.same(ok(t, await as(writer)('GET', '/v1/memory/repo:web?version=1'), 200, 'a version by label'), first);
  t.same(ok(t, await as(writer)('GET', `/v1/memory/${encodeURIComponent('docs:runbooks/deploy')}`), 200, 'a percent-encoded label'), nested);
  const versions = ok(t, await as(writer)('GET', '/v1/memory/repo:web/versions'), 200, 'versions by label');
  t.same([versions.id, versions.versions.map((v: { version: number }) => v.version)], [first.id, [1, 2]]);

  t.equal((await as(writer)('GET', '/v1/memory/repo:api')).status, 404, 'an unknown key');
  t.equal((await as(writer)('GET', '/v1/memory/nothing:web')).status, 404, 'an unknown namespace');
  t.match(ok(t, await as(writer)('DELETE', '/v1/memory/repo:web'), 200, 'delete by label'), { id: first.id, version: 3, tombstone: true });
  t.match((await as(writer)('GET', '/v1/memory/repo:web')).json, { status: 404, deletedVersion: 3 }, 'deleted');
});

t.test('GET /v1/memory lists live items oldest first, filtered, a page at a time', async (t) => {
  const { writer, other, as } = await setup(t);
  const written: Array<{ id: string; key: string }> = [];
  for (let i = 0; i < 7; i++) {
    const namespace = i % 2 === 0 ? 'incidents' : 'notes';
    const by = i < 5 ? writer : other;
    written.push(ok(t, await as(by)('POST', '/v1/memory', { namespace, key: `k${i}`, text: `item ${i}`, attributes: { team: i < 3 ? 'payments' : 'search', n: i } }), 201, `write ${i}`));
  }
  ok(t, await as(writer)('POST', '/v1/memory', { namespace: 'incidents', key: 'k0', text: 'item 0, again' }), 201, 'a new version of the first');
  ok(t, await as(writer)('DELETE', `/v1/memory/${written[1]!.id}`), 200, 'delete the second');

  const keys = (page: { data: Array<{ key: string }> }) => page.data.map((item) => item.key);
  const all = ok(t, await as(writer)('GET', '/v1/memory'), 200, 'list');
  t.same(keys(all), ['k0', 'k2', 'k3', 'k4', 'k5', 'k6'], 'live items in the order first written, deleted ones left out');
  t.match(all.data[0], { key: 'k0', version: 2, text: 'item 0, again' }, 'each at its current version');
  t.equal(all.nextCursor, null);
  t.equal(all.revision, 9, 'the memory state listed');

  t.same(keys(ok(t, await as(writer)('GET', '/v1/memory?namespace=incidents'), 200, 'namespace')), ['k0', 'k2', 'k4', 'k6']);
  t.same(keys(ok(t, await as(writer)(`GET`, `/v1/memory?createdBy=${other.id}`), 200, 'createdBy')), ['k5', 'k6']);
  t.same(keys(ok(t, await as(writer)('GET', '/v1/memory?attribute=team:payments'), 200, 'attribute')), ['k2'], 'the first item’s new version has no team');
  t.same(keys(ok(t, await as(writer)('GET', '/v1/memory?attribute=n:4&namespace=incidents'), 200, 'numeric attribute as text')), ['k4']);
  t.same(keys(ok(t, await as(writer)('GET', '/v1/memory?asOf=7'), 200, 'asOf')), ['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6'], 'as memory stood at revision 7');

  const first = ok(t, await as(writer)('GET', '/v1/memory?limit=4'), 200, 'page 1');
  t.same(keys(first), ['k0', 'k2', 'k3', 'k4']);
  t.type(first.nextCursor, 'string');
  ok(t, await as(writer)('POST', '/v1/memory', { namespace: 'notes', key: 'k7', text: 'written between pages' }), 201, 'write between pages');
  ok(t, await as(writer)('DELETE', `/v1/memory/${written[2]!.id}`), 200, 'delete an item already listed');
  const second = ok(t, await as(writer)('GET', `/v1/memory?limit=4&cursor=${first.nextCursor}`), 200, 'page 2');
  t.same(keys(second), ['k5', 'k6', 'k7'], 'the next page neither repeats nor skips, and a new item joins the end');
  t.equal(second.nextCursor, null);

  for (const query of ['limit=0', 'limit=201', 'cursor=nonsense', 'attribute=team', 'namespace=Bad', 'asOf=yesterday', 'other=1']) {
    t.equal((await as(writer)('GET', `/v1/memory?${query}`)).status, 400, `${query} is refused`);
  }
});
