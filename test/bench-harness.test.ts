/**
 * The benchmark harness end to end, in quick and in the shortest judged runs: it runs, writes
 * well-formed JSON, Markdown and SVG, and `--check` exits non-zero naming a missed target. It never
 * judges speed: the targets it checks against are either impossible or unmissable.
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { Http1Connection, serialiseRequest } from '../bench/lib/http1-connection.ts';

// Each run compiles policies and starts load-generator processes; allow for a busy machine.
t.setTimeout(300_000);

const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function bench(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      // Loads binaryen only in the runs that compile (scripts/register-typescript.js says why).
      ['--import=./scripts/register-typescript.js', 'bench/run.ts', ...args],
      { cwd: ROOT, timeout: 240_000, killSignal: 'SIGKILL' },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Tags open and close in order, the document is one <svg> element: enough of XML to catch a broken renderer. */
function xmlProblems(text: string): string[] {
  const problems: string[] = [];
  const stack: string[] = [];
  const body = text.trim();
  if (!body.startsWith('<svg')) problems.push('does not start with <svg');
  for (const match of body.matchAll(/<(\/?)([a-zA-Z][\w:-]*)([^>]*?)(\/?)>/g)) {
    const [, closing, name, attributes, selfClosing] = match;
    if (/[<&](?!amp;|lt;|gt;|quot;|apos;)/.test(attributes!)) problems.push(`unescaped character in <${name}>`);
    if (selfClosing) continue;
    if (closing) {
      const open = stack.pop();
      if (open !== name) problems.push(`</${name}> closes <${open}>`);
    } else stack.push(name!);
  }
  if (stack.length > 0) problems.push(`unclosed: ${stack.join(', ')}`);
  if (!body.endsWith('</svg>')) problems.push('does not end with </svg>');
  return problems;
}

const out = await mkdtemp(path.join(os.tmpdir(), 'gatehouse-bench-test-'));
t.teardown(() => rm(out, { recursive: true, force: true }));

/**
 * A short run that is still judged (`--quick` never prints a pass or a miss): half a second per
 * phase is plenty to fill every file and chart, and the targets checked are impossible or unmissable.
 */
const SHORT = ['--duration', '0.5', '--warmup', '0.25', '--rates', '1000', '--connections', '16'];

const targetsFile = (name: string, targets: unknown[]) => {
  const file = path.join(out, name);
  return writeFile(file, JSON.stringify({ targets })).then(() => file);
};

t.test('--help prints the options, the scenarios and the targets, and exits 0', async (t) => {
  const run = await bench('--help');
  t.equal(run.code, 0);
  for (const option of ['--scenario', '--quick', '--check', '--profile', '--out']) t.match(run.stdout, option);
  t.match(run.stdout, /^ {2}decisions +Governed decision creation/m, 'each scenario with its description');
  t.match(run.stdout, /decisions cpuPerRequestRatioFloor\.max ≤ 1\.4: /, 'each target of bench/targets.json with its bound');
});

t.test('a quick run never judges speed: --quick with --check is a usage error', async (t) => {
  const run = await bench('--quick', '--check', '--scenario', 'policy', '--out', path.join(out, 'unused'));
  t.equal(run.code, 2);
  t.match(run.stderr, /--quick never judges speed/);
});

t.test('an unknown scenario is refused with the available ones listed', async (t) => {
  const run = await bench('--scenario', 'policy,no-such-scenario', '--out', path.join(out, 'unused'));
  t.equal(run.code, 2);
  t.match(run.stderr, /unknown scenario no-such-scenario; available: .*policy/);
});

t.test('a short run writes results, summary and charts; an impossible target fails --check', async (t) => {
  const impossible = await targetsFile('impossible.json', [
    { scenario: 'policy', metric: 'evaluate.medianUs', max: 0.000001, description: 'faster than light' },
    { scenario: 'no-such-scenario', metric: 'anything', max: 1, description: 'a scenario that did not run' },
  ]);
  const run = await bench(...SHORT, '--scenario', 'policy,decisions', '--out', out, '--check', '--targets', impossible);
  t.equal(run.code, 1, 'exits 1', { stderr: run.stderr });
  t.match(run.stderr, /missed 1 target: policy evaluate\.medianUs/);
  t.match(run.stdout, /not run\s+no-such-scenario anything/);

  const result = JSON.parse(await readFile(path.join(out, 'policy.json'), 'utf8'));
  t.equal(result.scenario, 'policy');
  t.equal(result.error, null);
  t.same(result.series.map((s: { target: string }) => s.target).sort(), ['opa-wasm', 'plain-js', 'sdk-floor']);
  for (const s of result.series) {
    t.type(s.histogram, 'string', `${s.target} carries its histogram`);
    t.equal(s.histogramUnit, 'ns');
    t.ok(s.operations > 0, `${s.target} measured operations`);
  }
  t.type(result.metrics['evaluate.medianUs'], 'number');
  t.type(result.metrics['evaluate.ratioToPlainJs'], 'number');
  t.type(result.metrics['opa-wasm.micro.p99Ms'], 'number', 'per-series metrics are derived');
  t.ok(result.run.machine.cores > 0);
  t.type(result.run.machine.cpuModel, 'string');
  t.type(result.run.machine.node, 'string');
  t.ok('commit' in result.run.git && 'dirty' in result.run.git);
  t.ok(result.run.generator.ceiling > 0, 'the generator ceiling was measured');

  const decisions = JSON.parse(await readFile(path.join(out, 'decisions.json'), 'utf8'));
  t.equal(decisions.error, null);
  t.same(
    decisions.series.map((s: { target: string; mode: string; rate: number | null; baseline: boolean }) => [s.target, s.mode, s.rate, s.baseline]),
    [
      ['gatehouse', 'max', null, false],
      ['gatehouse', 'rate', 1000, false],
      ['gatehouse-approve', 'rate', 1000, false],
      ['gatehouse-execute', 'rate', 1000, false],
      ['raw-uws', 'max', null, true],
      ['raw-uws', 'rate', 1000, true],
      ['node-http', 'max', null, true],
      ['node-http', 'rate', 1000, true],
      ['governed-floor', 'max', null, true],
      ['governed-floor', 'rate', 1000, true],
      ['cerbos', 'max', null, true],
      ['cerbos', 'rate', 1000, true],
      ['gatehouse-threads-1', 'max', null, false],
      ['gatehouse-threads-1', 'rate', 1000, false],
      ['gatehouse-threads-2', 'max', null, false],
      ['gatehouse-threads-2', 'rate', 1000, false],
    ],
  );
  for (const s of decisions.series) {
    t.ok(s.operations > 0 && typeof s.histogram === 'string', `${s.target} ${s.mode} measured requests`);
    // A quick phase may use less than a clock tick (10 ms) of an idle-looking server: 0 is a reading too.
    t.ok(s.cpuUsPerRequest >= 0, `${s.target} ${s.mode} reports its server's CPU per request: ${s.cpuUsPerRequest}`);
  }
  t.type(decisions.metrics['cpuPerRequestRatioFloor.max'], 'number');
  t.type(decisions.metrics['cerbos.rate1000.cpuUsPerRequest'], 'number');
  t.type(decisions.metrics.maxThroughputRatio, 'number');
  t.ok(decisions.metrics['threads2.throughputRatio'] > 0, 'two threads measured against one');
  t.ok(decisions.metrics.floorThroughputRatio > 0, 'the governed floor answered');
  const floorMax = decisions.series.find((s: { target: string; mode: string }) => s.target === 'governed-floor' && s.mode === 'max');
  t.ok(floorMax.machineBusy > 0 && floorMax.machineBusy <= 1, `the machine's busy share was read: ${floorMax.machineBusy}`);
  t.ok(decisions.metrics.floorAllCoresBoundRatio >= decisions.metrics.floorThroughputRatio, 'the all-cores bound is at least the floor');
  t.type(decisions.metrics['gatehouse.rate1000.p99Ms'], 'number');
  t.type(decisions.metrics['actionCpuRatioCreate.approve'], 'number', 'approve measured against creation');
  t.type(decisions.metrics['actionCpuRatioCreate.execute'], 'number', 'execute measured against creation');
  t.type(decisions.metrics['commitWindow1ms.cpuRatio'], 'number', 'the commit window measured against none');

  const summary = JSON.parse(await readFile(path.join(out, 'summary.json'), 'utf8'));
  t.same(summary.scenarios.map((s: { scenario: string }) => s.scenario), ['policy', 'decisions']);
  t.same(
    summary.check.map((o: { target: { metric: string }; status: string }) => [o.target.metric, o.status]),
    [
      ['evaluate.medianUs', 'miss'],
      ['anything', 'not run'],
    ],
  );

  const markdown = await readFile(path.join(out, 'summary.md'), 'utf8');
  t.match(markdown, /^## policy$/m);
  t.match(markdown, /^\| \*\*opa-wasm\*\* \| micro \|/m);
  t.match(markdown, /^## decisions$/m);
  t.match(markdown, /^\| raw-uws \(baseline\) \| rate1000 \|/m);
  t.match(markdown, /\| errors \| server CPU µs\/request \|/);
  t.match(markdown, /\| policy \| faster than light \| `evaluate.medianUs` \| .* \| \*\*MISS\*\*/);
  t.match(markdown, /\(charts\/policy\.latency\.micro\.svg\)/);

  const charts = (await readdir(path.join(out, 'charts'))).sort();
  t.same(charts, ['decisions.latency.max.svg', 'decisions.latency.rate1000.svg', 'decisions.throughput.svg', 'policy.latency.micro.svg']);
  for (const chart of charts) {
    const svg = await readFile(path.join(out, 'charts', chart), 'utf8');
    t.same(xmlProblems(svg), [], `${chart} is well-formed`);
    t.match(svg, /<polyline points="[\d., -]+"/, `${chart} draws lines`);
    const labels = chart.startsWith('policy') ? ['opa-wasm', 'plain-js'] : ['gatehouse', 'raw-uws', 'node-http'];
    for (const label of labels) t.match(svg, new RegExp(`>${label}( p50| p99)?<`), `${chart} labels ${label}`);
    if (chart.includes('.latency.')) t.match(svg, />99%</, `${chart} has percentile ticks`);
    else t.match(svg, />gatehouse p99</, `${chart} draws p99 per target`);
  }
});

t.test('a generous target passes --check', async (t) => {
  const generous = await targetsFile('generous.json', [
    { scenario: 'policy', metric: 'evaluate.medianUs', max: 1e9, description: 'slower than a geological era' },
    { scenario: 'proxy', metric: 'addedP50Ms', max: 1, description: 'not run here' },
  ]);
  const run = await bench(...SHORT, '--scenario', 'policy', '--out', path.join(out, 'generous'), '--check', '--targets', generous);
  t.equal(run.code, 0, 'exits 0', { stderr: run.stderr });
  t.match(run.stdout, /pass\s+policy evaluate\.medianUs/);
  t.match(run.stdout, /not run\s+proxy addedP50Ms/);
});

t.test('the load generator parses responses split anywhere, by length or chunked', async (t) => {
  // Each request gets the next canned response, written in the fragments given.
  const responses = [
    ['HTTP/1.1 200 OK\r\nContent-Length: 5\r\n', '\r\nhel', 'lo'],
    ['HTTP/1.1 201 Created\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc', '\r\n', '4\r\nde\r\n\r\n0\r\n', 'x-trailer: 1\r\n', '\r\n'],
    ['HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n'],
    ['HTTP/1.1 503 Service Unavailable\r\nContent-Length: 2\r\n\r\nno'],
  ];
  const requests: string[] = [];
  let next = 0;
  let connections = 0;
  const server = createServer((socket: Socket) => {
    connections++;
    socket.on('data', async (chunk) => {
      requests.push(chunk.toString('latin1'));
      for (const fragment of responses[next++]!) {
        socket.write(fragment);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => server.close());
  const statuses: number[] = [];
  let answered: () => void = () => {};
  const connection = new Http1Connection('127.0.0.1', (server.address() as AddressInfo).port, {
    onResponse: (status) => {
      statuses.push(status);
      answered();
    },
    onError: () => t.fail('no request should fail'),
  });
  t.teardown(() => connection.close());
  const request = serialiseRequest('POST', '/v1/decisions', '127.0.0.1', { 'content-type': 'application/json' }, '{"a":1}');
  for (const _ of responses) {
    const done = new Promise<void>((resolve) => (answered = resolve));
    connection.send(request);
    await done;
  }
  t.same(statuses, [200, 201, 404, 503]);
  t.equal(requests.length, 4);
  t.equal(connections, 1, 'one connection carried every request');
  t.equal(requests[0], 'POST /v1/decisions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 7\r\n\r\n{"a":1}');
});
