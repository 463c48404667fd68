import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import t from 'tap';
import { AddressGuard, type Resolver } from '../core/ssrf-guard.ts';
import { WebhookSender } from '../core/webhooks/sender.ts';
import { ToolExecution } from '../proxy/gateway/tool-execution.ts';
import { Upstreams } from '../proxy/gateway/upstreams.ts';
import { startUpstream } from './helpers/upstream.ts';

// The SSRF guard judges addresses by what they reach. Addresses other than 127.0.0.1 are only
// classified here, never connected to: host names resolve through an injected resolver, and
// the only answers given to a connection are 127.0.0.1.

/** Answers from a table instead of DNS; a function answers afresh on every lookup. */
function resolver(answers: Record<string, string[] | (() => string[])>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolve: Resolver = (hostname, _options, callback) => {
    calls.push(hostname);
    const answer = answers[hostname];
    if (!answer) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
    const addresses: LookupAddress[] = (typeof answer === 'function' ? answer() : answer).map((address) => ({ address, family: isIP(address) }));
    callback(null, addresses);
  };
  return Object.assign(resolve, { calls });
}

const NAMES = resolver({
  'public.test': ['93.184.216.34'],
  'public6.test': ['2606:4700:4700::1111', '1.1.1.1'],
  'loopback.test': ['127.0.0.1'],
  'mixed.test': ['93.184.216.34', '10.0.0.7'],
  'mapped.test': ['::ffff:7f00:1'],
  'metadata.test': ['169.254.169.254'],
  'empty.test': [],
});

const guard = (allow: string[] = [], resolve: Resolver = NAMES) => new AddressGuard({ allow, allowSetting: 'TEST_ALLOW', resolve });

/** URL, and whether it may be reached with no allowlist. */
const FORMS: Array<[string, boolean]> = [
  // IPv4 in every spelling the URL parser accepts.
  ['http://127.0.0.1/', false],
  ['http://2130706433/', false],
  ['http://0x7f.1/', false],
  ['http://127.1/', false],
  ['http://0177.0.0.1/', false],
  ['http://0x7f000001/', false],
  ['http://017700000001/', false],
  ['http://127.255.255.254:8080/', false],
  ['http://0/', false],
  ['http://0.0.0.0/', false],
  ['http://10.0.0.1/', false],
  ['http://172.16.0.1/', false],
  ['http://172.31.255.255/', false],
  ['http://192.168.1.1/', false],
  ['http://169.254.169.254/latest/meta-data', false],
  ['http://100.64.0.1/', false],
  ['http://224.0.0.1/', false],
  ['http://255.255.255.255/', false],
  ['http://240.0.0.1/', false],
  ['http://192.0.2.1/', false],
  ['http://198.18.0.1/', false],
  ['http://192.0.0.8/', false],
  ['http://8.8.8.8/', true],
  ['http://134744072/', true],
  ['http://0x08080808/', true],
  ['https://1.1.1.1/', true],
  ['http://172.32.0.1/', true],
  ['http://100.128.0.1/', true],
  // IPv6, and the IPv6 forms that carry an IPv4 address.
  ['http://[::1]/', false],
  ['http://[::]/', false],
  ['http://[0:0:0:0:0:0:0:1]/', false],
  ['http://[::ffff:127.0.0.1]/', false],
  ['http://[::ffff:7f00:1]/', false],
  ['http://[::ffff:a9fe:a9fe]/', false],
  ['http://[::ffff:0.0.0.0]/', false],
  ['http://[::127.0.0.1]/', false],
  ['http://[::a00:1]/', false],
  ['http://[::ffff:0:7f00:1]/', false],
  ['http://[64:ff9b::7f00:1]/', false],
  ['http://[64:ff9b::10.0.0.1]/', false],
  ['http://[64:ff9b::a9fe:a9fe]/', false],
  ['http://[64:ff9b:1::a00:1]/', false],
  ['http://[64:ff9b:1::808:808]/', false],
  ['http://[2002:7f00:1::]/', false],
  ['http://[2002:c0a8:101::1]/', false],
  ['http://[2002:a9fe:a9fe::]/', false],
  ['http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', false],
  ['http://[fec0::1]/', false],
  ['http://[fc00::1]/', false],
  ['http://[fd12:3456::1]/', false],
  ['http://[fe80::1]/', false],
  ['http://[ff02::1]/', false],
  ['http://[2001:db8::1]/', false],
  ['http://[100::1]/', false],
  ['http://[5f00::1]/', false],
  ['http://[3fff::1]/', false],
  ['http://[4000::1]/', false],
  ['http://[2606:4700:4700::1111]/', true],
  ['http://[::ffff:8.8.8.8]/', true],
  ['http://[::ffff:808:808]/', true],
  ['http://[64:ff9b::808:808]/', true],
  ['http://[2002:808:808::1]/', true],
  ['http://[::808:808]/', true],
  // Names: every address they resolve to is judged.
  ['http://public.test/', true],
  ['http://public6.test/', true],
  ['http://loopback.test/', false],
  ['http://mixed.test/', false],
  ['http://mapped.test/', false],
  ['http://metadata.test/', false],
  ['http://empty.test/', false],
  ['http://nxdomain.test/', false],
];

t.test(`a table of ${FORMS.length} address forms, judged by what they reach`, async (t) => {
  t.ok(FORMS.length >= 40);
  const strict = guard();
  for (const [form, allowed] of FORMS) {
    if (allowed) await t.resolves(strict.check(new URL(form), 'body/url'), `${form} allowed`);
    else await t.rejects(strict.check(new URL(form), 'body/url'), { code: 'invalid_request', extensions: { errors: [{ path: 'body/url' }] } }, `${form} refused`);
  }
});

t.test('refusals say what the address reaches and how to allow it', async (t) => {
  const strict = guard();
  t.match(strict.refusal('::ffff:7f00:1'), /^::ffff:7f00:1 \(reaching 127\.0\.0\.1\) is not a public address \(loopback\); allow it with TEST_ALLOW$/);
  t.match(strict.refusal('2002:a9fe:a9fe::'), /reaching 169\.254\.169\.254.*linkLocal/);
  t.match(strict.refusal('64:ff9b:1::a00:1'), /NAT64 local-use/);
  t.match(strict.refusal('fe80::1%eth0'), /linkLocal/, 'a zone id does not hide a link-local address');
  t.match(strict.refusal('localhost'), /not an IP address/);
  await t.rejects(strict.check(new URL('ftp://8.8.8.8/'), 'body/url'), { message: /use http or https/ });
  await t.rejects(strict.check(new URL('http://u:p@8.8.8.8/'), 'body/url'), { message: /credentials/ });
  await t.rejects(strict.check(new URL('http://nxdomain.test/'), 'body/upstream/url'), { message: /does not resolve \(ENOTFOUND\)/, extensions: { errors: [{ path: 'body/upstream/url' }] } });
});

t.test('the allowlist permits addresses in any spelling, networks and host names', async (t) => {
  const resolve = resolver({ 'hooks.internal': ['10.9.9.9'] });
  const allowing = guard(['127.0.0.1', '10.1.0.0/16', 'fd00::/8', 'hooks.internal'], resolve);
  for (const form of ['http://127.0.0.1/', 'http://2130706433/', 'http://[::ffff:7f00:1]/', 'http://[64:ff9b::7f00:1]/', 'http://10.1.200.3/', 'http://[::ffff:10.1.0.5]/', 'http://[fd00::5]/']) {
    await t.resolves(allowing.check(new URL(form), 'body/url'), `${form} allowed`);
  }
  for (const form of ['http://127.0.0.2/', 'http://10.2.0.1/', 'http://[fc00::1]/', 'http://169.254.169.254/']) {
    await t.rejects(allowing.check(new URL(form), 'body/url'), { message: /not a public address/ }, `${form} still refused`);
  }
  await t.resolves(allowing.check(new URL('http://HOOKS.internal:9000/x'), 'body/url'), 'an allowed host name');
  t.same(resolve.calls, [], 'is not resolved');
  t.throws(() => guard(['nonsense/8']), /TEST_ALLOW: nonsense\/8 is not a CIDR/);
  t.throws(() => guard(['10.0.0.0/40']), /TEST_ALLOW: 10\.0\.0\.0\/40 is not a CIDR/, 'a prefix too long for its family');
});

t.test('the connection lookup refuses a name if any of its addresses is refused', async (t) => {
  const strict = guard();
  const lookup = (hostname: string, all: boolean) =>
    new Promise<{ error: NodeJS.ErrnoException | null; address: unknown }>((resolve) => strict.lookup(hostname, { all }, (error, address) => resolve({ error, address })));
  t.match(await lookup('mixed.test', true), { error: { code: 'EADDRNOTALLOWED', message: /refused: mixed\.test resolves to 10\.0\.0\.7 is not a public address/ } });
  t.match(await lookup('mapped.test', false), { error: { code: 'EADDRNOTALLOWED' } });
  t.match(await lookup('empty.test', true), { error: { code: 'EADDRNOTALLOWED', message: /no address/ } });
  t.match(await lookup('nxdomain.test', true), { error: { code: 'ENOTFOUND' } });
  t.same(await lookup('public6.test', true), { error: null, address: [{ address: '2606:4700:4700::1111', family: 6 }, { address: '1.1.1.1', family: 4 }] });
  t.same(await lookup('public.test', false), { error: null, address: '93.184.216.34' });
});

/** A name that resolves to a public address when first asked, then to 127.0.0.1 (DNS rebinding). */
function rebinding(): Resolver & { calls: string[] } {
  let asked = 0;
  return resolver({ 'rebind.test': () => (asked++ === 0 ? ['93.184.216.34'] : ['127.0.0.1']) });
}

t.test('webhook deliveries: a rebound name is refused at connect, and so is an address in the URL', async (t) => {
  const receiver = await startUpstream(t);
  const url = `http://rebind.test:${receiver.port}/hook`;
  const resolve = rebinding();
  const strict = guard([], resolve);
  await t.resolves(strict.check(new URL(url), 'body/url'), 'public when configured');
  const sender = new WebhookSender(strict, 2_000);
  t.teardown(() => sender.close());
  const rebound = await sender.send(url, {}, '{}');
  t.match(rebound, { ok: false, status: null, error: /EADDRNOTALLOWED: refused: rebind\.test resolves to 127\.0\.0\.1/ });
  t.same(resolve.calls, ['rebind.test', 'rebind.test'], 'the connection resolved through the guard');
  const literal = await sender.send(`http://127.0.0.1:${receiver.port}/hook`, {}, '{}');
  t.match(literal, { ok: false, error: /refused: 127\.0\.0\.1 is not a public address/ });
  t.equal(receiver.received.length, 0, 'nothing reached the receiver');

  const allowingGuard = guard(['127.0.0.1'], rebinding());
  await t.resolves(allowingGuard.check(new URL(url), 'body/url'));
  const allowing = new WebhookSender(allowingGuard, 2_000);
  t.teardown(() => allowing.close());
  t.match(await allowing.send(url, {}, '{}'), { ok: true, status: 200 }, 'the same name, allowed, connects to the address the guard resolved');
  t.equal(receiver.received.length, 1);
});

t.test("agents' tool calls: a rebound name is refused at connect, and so is an address in the URL", async (t) => {
  const tool = await startUpstream(t);
  const url = `http://rebind.test:${tool.port}/tool`;
  const execution = (allow: string[]) => {
    const tools = guard(allow, rebinding());
    const upstreams = new Upstreams({ maxSockets: 4, lookup: tools.lookup });
    t.teardown(() => upstreams.close());
    return { tools, execution: new ToolExecution(upstreams, tools, 1024) };
  };
  const request = (target: string) => ({ method: 'POST', url: target, body: Buffer.from('{}'), timeoutMs: 2_000 });
  const strict = execution([]);
  await t.resolves(strict.tools.check(new URL(url), 'body/upstream/url'), 'public when registered');
  t.match(await strict.execution.send(request(url)), { kind: 'failure', code: 'upstream_unavailable', detail: /refused: rebind\.test resolves to 127\.0\.0\.1/ });
  t.match(await strict.execution.send(request(`http://[::ffff:7f00:1]:${tool.port}/tool`)), { kind: 'failure', detail: /refused: ::ffff:7f00:1 \(reaching 127\.0\.0\.1\)/ });
  t.match(await strict.execution.send(request(`http://2130706433:${tool.port}/tool`)), { kind: 'failure', detail: /refused: 127\.0\.0\.1 is not a public address/ });
  t.equal(tool.received.length, 0, 'nothing reached the tool');
  const allowed = execution(['127.0.0.1']);
  await t.resolves(allowed.tools.check(new URL(url), 'body/upstream/url'));
  t.match(await allowed.execution.send(request(url)), { kind: 'response', response: { status: 200 } }, 'allowed, it connects');
  t.equal(tool.received.length, 1);
});
