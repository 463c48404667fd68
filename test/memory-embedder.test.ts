import { createServer } from 'node:http';
import { copyFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { dot } from '../core/memory/embedder.ts';
import { HttpEmbedder, httpEmbedderFromEnv } from '../core/memory/http-embedder.ts';
import { Memory } from '../core/memory/memory.ts';
import { VECTORS_DATABASE } from '../core/memory/item-store.ts';
import { tokenize } from '../core/memory/tokenize.ts';
import { Store } from '../core/store.ts';
import { defaultCachePath, loadWordVectors, readWordVectors, WordVectorEmbedder } from '../core/memory/word-vectors.ts';
import { tempDir } from './helpers/gatehouse.ts';

// The embedders: the offline word-vector model and its binary cache, and the HTTP provider
// against a real HTTP server speaking the embeddings protocol.

t.setTimeout(300_000);

t.test('the tokenizer folds case, accents and apostrophes', async (t) => {
  t.same(tokenize("Café DON'T  re-deploy eu-west-1's API!"), ['cafe', 'dont', 're', 'deploy', 'eu', 'west', '1', 's', 'api']);
  t.same(tokenize('x'.repeat(41) + ' ok'), ['ok'], 'overlong tokens are dropped');
});

t.test('the word-vector model embeds meaning', async (t) => {
  const embedder = new WordVectorEmbedder();
  const [outage, downtime, budget, nothing] = await embedder.embed(['the payment service outage', 'billing system downtime', 'quarterly marketing budget', 'zzqx']);
  t.equal(outage!.length, 100);
  t.ok(Math.abs(dot(outage!, outage!) - 1) < 1e-5, 'unit length');
  t.ok(dot(outage!, downtime!) > dot(outage!, budget!) + 0.1, 'paraphrases are closer than unrelated text');
  t.ok(nothing!.every((x) => x === 0), 'text without known words is the zero vector');
  const cache = readWordVectors(defaultCachePath());
  t.equal(cache.dimensions, 100);
  t.ok(cache.index.size > 300_000, 'the whole vocabulary is cached');
  t.equal(cache.index.get('the'), 0, 'rows keep the frequency order');
});

t.test("the word-vector model's vectors are worked out, not stored: a version is searchable by meaning at once and after a restart", async (t) => {
  const dir = tempDir(t);
  const embedder = new WordVectorEmbedder();
  const semantic = { query: 'billing system downtime', topK: 1, weights: { semantic: 1, lexical: 0, graph: 0 }, graph: { expand: 0 } };
  const expected = dot(embedder.embedNow('the payment service outage'), embedder.embedNow('billing system downtime'));
  const cosine = async (memory: Memory) => (await memory.query('sandbox', semantic)).results.map((hit) => [hit.item.key, hit.raw.cosine]);
  let store = Store.open({ dataDir: dir });
  let memory = new Memory(store, embedder);
  const vector = await memory.embedForWrite('the payment service outage');
  t.equal(vector, null, 'a write is given no vector to store');
  await store.commit(() => memory.write('sandbox', 'key_test', { namespace: 'ops', key: 'outage', text: 'the payment service outage' }, vector));
  await store.commit(() => memory.write('sandbox', 'key_test', { namespace: 'ops', key: 'budget', text: 'quarterly marketing budget' }, null));
  const [[key, score]] = (await cosine(memory)) as [[string, number]];
  t.equal(key, 'outage', 'the paraphrase is found by meaning, with no stored vector');
  t.ok(Math.abs(score - expected) < 1e-6, 'scored by the model’s own vectors');
  t.equal([...store.database(VECTORS_DATABASE).getKeys({})].length, 0, 'no vector is stored');
  await memory.close();
  await store.close();
  store = Store.open({ dataDir: dir });
  memory = new Memory(store, embedder);
  t.match(await cosine(memory), [['outage', score]], 'the same answer after a restart');
  await memory.close();
  await store.close();
});

t.test('warming loads the model in steps between other work, and a text embedded meanwhile finishes the load', async (t) => {
  const dir = tempDir(t);
  // Paths of their own: the process's other tests have loaded the shared cache already.
  const path = join(dir, 'vectors.f32');
  copyFileSync(defaultCachePath(), path);
  symlinkSync(path, join(dir, 'again.f32'));
  const reference = new WordVectorEmbedder().embedNow('billing system downtime');
  const embedder = new WordVectorEmbedder(path);
  t.notOk(embedder.loaded, 'nothing is loaded before it is asked for');
  let turns = 0;
  const ticker = setInterval(() => turns++, 1);
  const warmed = embedder.warm();
  t.notOk(embedder.loaded, 'warm() returns before the model is loaded');
  t.equal(embedder.warm(), warmed, 'and starts the load once');
  await warmed;
  clearInterval(ticker);
  t.ok(embedder.loaded, 'its promise resolves once the model is loaded');
  t.ok(turns > 3, `timers ran while it loaded (${turns} turns): it did not hold the event loop throughout`);
  t.same(embedder.embedNow('billing system downtime'), reference, 'the same vectors as a model loaded at once');
  const hurried = new WordVectorEmbedder(join(dir, 'again.f32'));
  const loading = hurried.warm();
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.same(hurried.embedNow('billing system downtime'), reference, 'a text embedded during the load gets the same vector');
  t.ok(hurried.loaded, 'and the load is finished');
  await t.resolves(loading, 'the background load ends too');
});

t.test('a damaged cache is refused and rebuilt from the package', async (t) => {
  const path = join(tempDir(t), 'vectors.f32');
  writeFileSync(path, 'GHWV not really');
  t.throws(() => readWordVectors(path), /not a word-vector cache|truncated/, 'a damaged file is refused');
  const rebuilt = loadWordVectors(path);
  t.equal(rebuilt.dimensions, 100, 'loading converts the package again');
  const reference = readWordVectors(defaultCachePath());
  const row = rebuilt.index.get('budget')!;
  t.equal(row, reference.index.get('budget'));
  t.same(rebuilt.matrix.subarray(row * 100, row * 100 + 100), reference.matrix.subarray(row * 100, row * 100 + 100), 'same vectors as the shared cache');
});

t.test('the HTTP embedder speaks the embeddings protocol', async (t) => {
  const requests: Array<{ auth: string | undefined; body: { model: string; input: string[] } }> = [];
  let mode: 'ok' | 'fail' | 'short' = 'ok';
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const body = JSON.parse(text) as { model: string; input: string[] };
      requests.push({ auth: req.headers.authorization, body });
      if (mode === 'fail') return void res.writeHead(503).end();
      const data = body.input.map((input, index) => ({ index, embedding: mode === 'short' ? [1] : [input.length, 0, 0, 3] }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: data.reverse() }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  const { port } = server.address() as { port: number };
  const embedder = new HttpEmbedder({ url: `http://127.0.0.1:${port}/v1/embeddings`, model: 'tiny', dimensions: 4, apiKey: 'sk-test' });
  t.equal(embedder.id, 'http/tiny');
  const [a, b] = await embedder.embed(['abcd', 'x']);
  t.same(requests[0], { auth: 'Bearer sk-test', body: { model: 'tiny', input: ['abcd', 'x'] } });
  t.same([...a!].map((x) => Math.round(x * 1e6) / 1e6), [0.8, 0, 0, 0.6], 'normalised, and placed by index');
  t.ok(Math.abs(b![0]! - 1 / Math.sqrt(10)) < 1e-6);
  mode = 'fail';
  await t.rejects(embedder.embed(['x']), /answered 503/);
  mode = 'short';
  await t.rejects(embedder.embed(['x']), /not 4 finite numbers/);

  t.equal(httpEmbedderFromEnv({}), undefined, 'no URL: the offline model');
  t.throws(() => httpEmbedderFromEnv({ GATEHOUSE_EMBEDDER_URL: 'http://e/v1', GATEHOUSE_EMBEDDER_MODEL: 'm' }), /DIMENSIONS/);
  t.throws(() => httpEmbedderFromEnv({ GATEHOUSE_EMBEDDER_URL: 'ftp://e', GATEHOUSE_EMBEDDER_MODEL: 'm', GATEHOUSE_EMBEDDER_DIMENSIONS: '4' }), /http\(s\) URL/);
  t.match(httpEmbedderFromEnv({ GATEHOUSE_EMBEDDER_URL: 'http://e/v1', GATEHOUSE_EMBEDDER_MODEL: 'm', GATEHOUSE_EMBEDDER_DIMENSIONS: '8' }), { id: 'http/m', dimensions: 8 });
});
