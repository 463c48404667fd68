import t from 'tap';
import { MemoryItemStore } from '../core/memory/item-store.ts';
import { Store } from '../core/store.ts';
import { inexactInteger, MAX_JSON_DEPTH, scanJsonText } from '../proxy/http/json-text.ts';
import { ID_MAX_LENGTH } from '../proxy/id-schema.ts';
import { call, issueKey, startTestServer, tempDir } from './helpers/gatehouse.ts';
import { activeReaders, settledReaders } from './helpers/lmdb-readers.ts';
import { bundledEngine } from './helpers/policies.ts';

// Bad input is 400, never a 500 or a leaked LMDB reader (docs/security.md, "Input limits").

const engine = await bundledEngine();

/** More than LMDB's 126 reader slots: each leaked read transaction would take one. */
const MORE_THAN_READERS = 150;

t.test('a range read whose key cannot be encoded releases its read transaction', async (t) => {
  const store = Store.open({ dataDir: tempDir(t) });
  t.teardown(() => store.close());
  const items = new MemoryItemStore(store);
  const idle = activeReaders(store);
  const tooLong = 'x'.repeat(5000);
  for (let i = 0; i < MORE_THAN_READERS; i++) {
    t.throws(() => items.latest('sandbox', tooLong), /too large|does not fit/, 'LMDB refuses the key');
    // A commit between reads makes lmdb-js take a new snapshot for the next one, as requests do.
    await store.commit(() => {
      store.root.put(`tick-${i}`, i);
    });
  }
  t.equal(await settledReaders(store, idle), idle, 'no reader slot is left holding a snapshot');
  t.equal(items.latest('sandbox', 'mem_x'), undefined, 'reads still work');
});

t.test('ids longer than any real one are 400 before they reach LMDB', async (t) => {
  const { url, admin, server } = await startTestServer(t);
  const idle = activeReaders(server.services.store);
  const long = 'mem_' + 'x'.repeat(5000);
  for (let i = 0; i < MORE_THAN_READERS; i++) {
    const answer = await call(url, 'GET', `/v1/memory/${long}`, { key: admin });
    if (answer.status !== 400) t.fail(`request ${i}: ${answer.status} ${answer.text}`);
  }
  const answer = await call(url, 'GET', `/v1/memory/${'€'.repeat(ID_MAX_LENGTH + 1)}/versions`, { key: admin });
  t.equal(answer.status, 400);
  t.match(answer.json, { code: 'invalid_request', status: 400, errors: [{ path: 'params/id', message: /less or equal to 128/ }] });
  t.equal((await call(url, 'GET', `/v1/memory/${'€'.repeat(ID_MAX_LENGTH)}/versions`, { key: admin })).status, 404, 'an id at the bound is looked up');
  t.equal(
    (await call(url, 'GET', `/v1/webhooks/config/wh_x/deliveries?cursor=dlv_${'a'.repeat(ID_MAX_LENGTH)}`, { key: admin })).json.errors?.[0]?.path,
    'query/cursor',
    'a delivery cursor is an id too',
  );
  t.equal(await settledReaders(server.services.store, idle), idle, 'no reader slot is left holding a snapshot');
  t.equal((await call(url, 'GET', '/healthz')).status, 200);
});

t.test('a call refused before validation, naming a decision id too long for a key, is recorded, not a 500', async (t) => {
  const { url, admin } = await startTestServer(t);
  // The scope is checked before the path is validated, and the refusal is audited under the decision it names.
  const reader = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  const answer = await call(url, 'POST', `/v1/decisions/${'€'.repeat(1000)}/approve`, { key: reader.key, body: {} });
  t.equal(answer.status, 403, answer.text);
  t.equal(answer.json.code, 'insufficient_scope');
});

t.test('objectives that could never be stored as keys are refused or get a key that can', async (t) => {
  const { url, admin } = await startTestServer(t, { policies: engine });
  const { key } = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:write', 'memory:read', 'memory:write'] });
  const decide = (objectives: string[]) => call(url, 'POST', '/v1/decisions', { key, body: { title: 'Ship', policy: 'decision-gate-v1', context: 'x', objectives } });

  const tooLong = await decide([`mem_${'€'.repeat(1020)}`]);
  t.equal(tooLong.status, 400, 'an objective reference over 256 characters');
  t.match(tooLong.json.errors, [{ path: 'body/objectives/0' }]);

  const letterless = await decide(['€€€', '日本語の目標']);
  t.equal(letterless.status, 200, `titles without Latin letters or digits: ${letterless.text}`);
  const objectives = (await call(url, 'GET', '/v1/objectives', { key })).json.data;
  t.equal(objectives.length, 2, 'two objectives');
  t.ok(objectives.every((o: { key: string }) => /^title-[0-9a-f]{16}$/.test(o.key)), 'keyed by a hash of the title');
  const again = await decide(['日本語の目標']);
  t.equal(again.status, 200);
  t.equal((await call(url, 'GET', '/v1/objectives', { key })).json.data.length, 2, 'the same title names the same objective');
  const created = await call(url, 'POST', '/v1/objectives', { key, body: { title: '😀' } });
  t.equal(created.status, 201, 'POST /v1/objectives accepts such a title too');
  t.match(created.json.key, /^title-/);
});

t.test(`bodies nested deeper than ${MAX_JSON_DEPTH} levels are 400 before they are parsed`, async (t) => {
  const { url, admin } = await startTestServer(t);
  const { key } = await issueKey(url, admin, { env: 'sandbox', scopes: ['admin'] });
  const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
  const post = (path: string, raw: string) => call(url, 'POST', path, { key, raw, headers: { 'content-type': 'application/json' } });

  const memory = await post('/v1/memory', `{"namespace":"notes","text":"deep","attributes":{"a":${nested(100_000)}}}`);
  t.equal(memory.status, 400, '100,000 levels in memory attributes');
  t.match(memory.json, { code: 'invalid_request', status: 400, detail: /nests deeper than 64 levels/, errors: [{ path: 'body' }] });
  const arrays = await post('/v1/memory', `{"namespace":"notes","text":"deep","attributes":{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}}`);
  t.equal(arrays.status, 400, '100,000 levels of arrays');

  const schema = `${'{"type":"object","properties":{"a":'.repeat(10_000)}{"type":"number"}${'}}'.repeat(10_000)}`;
  const tool = await post(
    '/v1/agents/tools',
    `{"name":"deep","description":"d","inputSchema":${schema},"upstream":{"method":"POST","url":"https://example.com"},"scopes":[],"policy":"agent-tools-v1"}`,
  );
  t.equal(tool.status, 400, 'a 20,000-level tool inputSchema');
  t.match(tool.json.detail, /nests deeper than 64 levels/);

  const brackets = await post('/v1/memory', JSON.stringify({ namespace: 'notes', text: '[[[[{{{{'.repeat(1000), attributes: { s: '{'.repeat(5000) } }));
  t.equal(brackets.status, 201, 'brackets inside strings do not count');
  const atTheLimit = await post('/v1/memory', `{"namespace":"notes","text":"deep","attributes":{"a":${nested(MAX_JSON_DEPTH - 2)}}}`);
  t.equal(atTheLimit.status, 201, `${MAX_JSON_DEPTH} levels are accepted: ${atTheLimit.text.slice(0, 200)}`);
  t.equal((await call(url, 'GET', '/healthz')).status, 200);
});

t.test('an integer a JavaScript number would round is 400, naming it; floats and exact integers are stored as sent', async (t) => {
  t.equal(inexactInteger('{"a":9007199254740993}'), '9007199254740993', '2^53 + 1 rounds');
  t.equal(inexactInteger('[-12345678901234567890]'), '-12345678901234567890');
  t.equal(inexactInteger('[9007199254740992, 18014398509481984, 123456789012345]'), null, '2^53, 2^54 and 15 digits are exact');
  t.equal(inexactInteger('{"s":"12345678901234567890","f":1.2345678901234567890,"e":1e30}'), null, 'digits in strings, fractions and exponents are not integers to check');
  t.equal(inexactInteger('{"s":"a \\" 12345678901234567890"}'), null, 'an escaped quote does not end the string');
  t.same(scanJsonText('{"a":"12345678901234567890","b":1.5}', 64).longDigits, false, 'digits in strings do not count');
  t.same(scanJsonText('[1234567890123456]', 64).longDigits, true);

  const { url, admin } = await startTestServer(t, { policies: engine });
  const { key } = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:write', 'decisions:read'] });
  const post = (raw: string) => call(url, 'POST', '/v1/decisions', { key, raw, headers: { 'content-type': 'application/json' } });
  const refused = await post('{"title":"Pay","policy":"decision-gate-v1","context":[{"source":"finance:amount","value":12345678901234567890}]}');
  t.equal(refused.status, 400);
  t.match(refused.json, { code: 'invalid_request', detail: /the body holds the integer 12345678901234567890, beyond the ±2\^53/, errors: [{ path: 'body' }] });
  t.same((await call(url, 'GET', '/v1/decisions', { key })).json.data, [], 'nothing was stored');

  const kept = await post('{"title":"Pay","policy":"decision-gate-v1","context":[{"source":"finance:amount","value":9007199254740992},{"source":"ops:ratio","value":0.1234567890123456789}]}');
  t.equal(kept.status, 200, kept.text.slice(0, 200));
  const read = await call(url, 'GET', `/v1/decisions/${kept.json.id}`, { key });
  t.same(read.json.context.map((c: { value: unknown }) => c.value), [9007199254740992, 0.1234567890123456789], 'an exact integer is stored as sent, a float as the double nearest it');
});
