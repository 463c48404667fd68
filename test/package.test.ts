import { execFile, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { list, x } from 'tar';
import { freshPage, launchBrowser } from './helpers/browser.ts';
import { issueKey, startTestServer, tempDir } from './helpers/gatehouse.ts';
import { bundledEngine } from './helpers/policies.ts';

/**
 * The packed package, installed into another project: `npm pack` (which builds dist/), the
 * tarball unpacked where npm puts it, `gatehouse/client` imported in plain Node with nothing but
 * its own dependency beside it, types checked, `npx gatehouse --help`, and `npx gatehouse serve`
 * answering until it is stopped; and `gatehouse/client` bundled for browsers from the installed
 * package, run in Chromium against a server. The package's dependencies are linked from this checkout's
 * node_modules rather than downloaded (hundreds of megabytes), as npm would place them.
 */
t.setTimeout(600_000);

const run = promisify(execFile);
const repo = fileURLToPath(new URL('..', import.meta.url));
const modules = join(repo, 'node_modules');
// npm's variables from an enclosing `npm test` would point the inner npm at this checkout.
const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));

const work = tempDir(t, 'gatehouse-package-');
await run('npm', ['pack', '--pack-destination', work], { cwd: repo, env, timeout: 300_000, maxBuffer: 64 * 1024 * 1024 });
const tarball = join(work, readdirSync(work).find((name) => name.endsWith('.tgz'))!);
const project = join(work, 'project');
const installed = join(project, 'node_modules', 'gatehouse');
mkdirSync(installed, { recursive: true });
writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', type: 'module', dependencies: { gatehouse: `file:${tarball}` } }));
await x({ file: tarball, cwd: installed, strip: 1 });
const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };

function link(name: string): void {
  mkdirSync(dirname(join(project, 'node_modules', name)), { recursive: true });
  symlinkSync(join(modules, name), join(project, 'node_modules', name));
}

const node = (script: string) => run(process.execPath, ['--input-type=module', '-e', script], { cwd: project, env, timeout: 60_000 });

t.test('the tarball holds compiled JavaScript and declarations, not the TypeScript sources', async (t) => {
  const files: string[] = [];
  await list({ file: tarball, onReadEntry: (entry) => void files.push(entry.path) });
  for (const file of ['package/dist/index.js', 'package/dist/index.d.ts', 'package/dist/proxy/client/index.js', 'package/dist/proxy/client/index.d.ts', 'package/bin/gatehouse.js']) {
    t.ok(files.includes(file), file);
  }
  t.ok(files.includes('package/dist/policies/runtime/build/runtime.wasm'), 'the policy runtime is compiled already');
  t.same(
    files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts') && !file.startsWith('package/dist/policies/runtime/assembly/')),
    [],
    'the only .ts files are the policy runtime’s AssemblyScript sources',
  );
});

t.test('gatehouse/client loads in plain Node with only its own dependency installed', async (t) => {
  link('standardwebhooks');
  const { stdout } = await node("const c = await import('gatehouse/client'); console.log(JSON.stringify(Object.keys(c)))");
  const names = JSON.parse(stdout) as string[];
  for (const name of ['GatehouseClient', 'PolicyDeniedError', 'verifyWebhook', 'subscribe']) t.ok(names.includes(name), name);
  const server = await node("await import('gatehouse')").catch((error: { stderr: string }) => error);
  t.match(server, { stderr: /Cannot find package/ }, 'the server needs its dependencies; the client did not');
});

t.test('with its dependencies: types, npx gatehouse --help, and npx gatehouse serve', async (t) => {
  for (const name of Object.keys(manifest.dependencies)) if (name !== 'standardwebhooks') link(name);
  link('@types/node');
  mkdirSync(join(project, 'node_modules', '.bin'));
  symlinkSync('../gatehouse/bin/gatehouse.js', join(project, 'node_modules', '.bin', 'gatehouse'));

  writeFileSync(
    join(project, 'use.ts'),
    [
      "import { GatehouseClient, type Decision } from 'gatehouse/client';",
      "import { startServer } from 'gatehouse';",
      "const client = new GatehouseClient({ baseUrl: 'http://127.0.0.1:8080' });",
      "const decision: Promise<Decision> = client.createDecision({ title: 't', policy: 'decision-gate-v1', context: 'x' });",
      'export { decision, startServer };',
    ].join('\n'),
  );
  writeFileSync(join(project, 'wrong.ts'), "import { GatehouseClient } from 'gatehouse/client';\nawait new GatehouseClient({ baseUrl: 'x' }).createDecision({ title: 1 });\n");
  // One compiler run checks both files (tsc reports each error under its file): half the time of two.
  const tsc = join(modules, 'typescript', 'bin', 'tsc');
  const flags = ['--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--types', 'node'];
  const checked = await run(process.execPath, [tsc, ...flags, 'use.ts', 'wrong.ts'], { cwd: project, env, timeout: 120_000 }).catch((error: { stdout: string }) => error);
  const errors = checked.stdout.split('\n').filter((line) => line.includes('error TS'));
  t.same(errors.filter((line) => !line.startsWith('wrong.ts')), [], 'a consumer type-checks against the .d.ts');
  t.match(errors.join('\n'), /^wrong\.ts.*error TS2322/m, 'and a wrong body is a type error');

  const help = await run('npx', ['--no-install', 'gatehouse', '--help'], { cwd: project, env, timeout: 60_000 });
  t.match(help.stdout, /usage: gatehouse <command>/);

  // detached: npm exec does not pass SIGTERM on, so the server is stopped through the group npx leads.
  const child = spawn('npx', ['--no-install', 'gatehouse', 'serve', '--port', '0', '--data-dir', join(work, 'data')], { cwd: project, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  // 'close': every process of the group that holds the output pipes (npx and the server) is gone.
  let closed = false;
  const done = new Promise<void>((resolve) => child.once('close', () => resolve()));
  void done.then(() => (closed = true));
  t.teardown(() => {
    if (!closed) process.kill(-child.pid!, 'SIGKILL');
  });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in 120 s:\n${output}`)), 120_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const found = /listening on (http:\/\/[\d.:]+)/.exec(output);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]!);
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    // A server that dies on start fails the test now, with what it said, not after the 120 s.
    void done.then(() => {
      clearTimeout(timer);
      reject(new Error(`serve exited before listening:\n${output}`));
    });
  });
  const { GatehouseClient } = (await import(join(installed, 'dist', 'proxy', 'client', 'index.js'))) as typeof import('../proxy/client/index.ts');
  const client = new GatehouseClient({ baseUrl: url });
  t.equal(await client.healthz(), true);
  t.match(await client.readyz(), { status: 'ready', policies: ['agent-tools-v1', 'decision-gate-v1', 'route-access-v1', 'security-review-v1', 'spend-approval-v1'] });
  process.kill(-child.pid!, 'SIGTERM');
  await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 60_000))]);
  t.ok(closed, 'gone within 60 s of SIGTERM');
  t.match(output, /"msg":"draining"[\s\S]*"msg":"stopped"/, 'after draining, as SIGTERM asks');
});

t.test('gatehouse/client bundled for browsers from the installed package runs in Chromium', async (t) => {
  // What a browser app does: import the client by its package name and bundle it (esbuild, with
  // the browser conditions and the package's `browser` map), nothing of the server included.
  writeFileSync(
    join(project, 'browser-app.js'),
    `import { GatehouseClient, UnknownPolicyError } from 'gatehouse/client';
window.runClient = async (apiKey) => {
  const client = new GatehouseClient({ baseUrl: location.origin, apiKey });
  const created = await client.createDecision({ title: '<b>from a browser</b>', policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 12 }] });
  const read = await client.getDecision(created.id);
  const listed = [];
  for await (const decision of client.decisions({ order: 'desc' })) listed.push(decision.id);
  const refusal = await client.createDecision({ title: 't', policy: 'no-such-policy-v1', context: 'x' }).catch((error) => error);
  const signing = await new GatehouseClient({ baseUrl: location.origin, apiKey, signer: { kid: 'k', alg: 'ed25519' } }).listDecisions().catch((error) => error);
  return {
    created: { id: created.id, status: created.status, gate: created.gate },
    read: read.title,
    listed,
    refusal: { typed: refusal instanceof UnknownPolicyError, code: refusal.code, status: refusal.status },
    signing: String(signing && signing.message),
  };
};
// A browser's WebSocket cannot send a key: the stream helper rides on the console's session cookie.
window.runStream = async (apiKey) => {
  const keyed = new GatehouseClient({ baseUrl: location.origin, apiKey });
  await keyed.createSession();
  const events = new GatehouseClient({ baseUrl: location.origin }).stream({ topics: ['decisions'], since: 0 });
  const created = await keyed.createDecision({ title: 'streamed', policy: 'decision-gate-v1', context: 'x' });
  for await (const event of events) {
    if (event.kind === 'decision.created' && event.data.id === created.id) return { kind: event.kind, title: event.data.title, cursor: event.cursor };
  }
};
`,
  );
  const { build } = await import('esbuild');
  const bundled = await build({ entryPoints: [join(project, 'browser-app.js')], bundle: true, platform: 'browser', format: 'esm', write: false, absWorkingDir: project, logLevel: 'silent' });
  const code = bundled.outputFiles[0]!.text;
  t.notMatch(code, /node:crypto|from "lmdb"|uWebSockets/, 'nothing of the server or of node:crypto in the bundle');
  t.ok(code.length < 200_000, `a client-sized bundle (${code.length} bytes)`);

  const { url, admin } = await startTestServer(t, { policies: await bundledEngine() });
  const { key } = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read', 'decisions:write', 'stream:subscribe'] });
  // A page fulfilled by the test (below) has no address of its own, so Chromium's local network
  // checks would count it as a public page and block its WebSocket to 127.0.0.1; a page served
  // from the sidecar's own address, as a real one is, passes them.
  const browser = await launchBrowser(t, ['--disable-features=LocalNetworkAccessChecks']);
  const { page, errors } = await freshPage(browser);
  // The app is served on the API's own origin, as a page the sidecar's users host beside it would be.
  await page.route(`${url}/app/**`, (route) =>
    route.fulfill(
      route.request().url().endsWith('.js')
        ? { contentType: 'text/javascript', body: code }
        : { contentType: 'text/html', body: '<!doctype html><title>app</title><script type="module" src="/app/client.js"></script>' },
    ),
  );
  await page.goto(`${url}/app/index.html`);
  await page.waitForFunction(() => typeof (window as unknown as { runClient?: unknown }).runClient === 'function');
  const result = await page.evaluate((apiKey) => (window as unknown as { runClient(key: string): Promise<Record<string, unknown>> }).runClient(apiKey), key);
  t.match(result.created, { id: /^dec_/, status: 'created', gate: 'auto' }, 'a decision created from the browser');
  t.equal(result.read, '<b>from a browser</b>', 'read back as it was sent');
  t.same(result.listed, [(result.created as { id: string }).id], 'listed by the async iterator');
  t.same(result.refusal, { typed: true, code: 'unknown_policy', status: 422 }, 'a refusal is a typed error');
  t.match(result.signing, /request signing .* needs Node/, 'signing in a browser is refused with a clear error');
  const streamed = await page.evaluate((apiKey) => (window as unknown as { runStream(key: string): Promise<Record<string, unknown>> }).runStream(apiKey), key);
  t.match(streamed, { kind: 'decision.created', title: 'streamed', cursor: Number }, "the stream helper, on the session's cookie, receives the decision's event");
  t.same(errors, [], 'no page errors');
});
