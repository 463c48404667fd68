import { createHmac } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import t from 'tap';
import { SignJWT } from 'jose';
import { BUILTINS, SDK_ANSWERED_BUILTINS, ZONE_OFFSET_BUILTIN, hostImportName } from '../policies/compiler/builtins.ts';
import { OPA_BUILT_MODULE_BUILTINS, hostBuiltins, withEvaluationScope } from '../policies/engine/host-builtins.ts';
import { PolicyEngine } from '../policies/engine/index.ts';
import { RFC3339_CASES } from './fixtures/rfc3339-cases.ts';

/** An HS256 token signed with `secret`. */
const JWT_HS256 = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhbGljZSIsImlzcyI6ImdhdGVob3VzZSIsImFkbWluIjp0cnVlfQ.NtYISo5tfydUUZBl4BSoZqGVkK__4te_NZyc7DiPlnA';

/** A token signed with HMAC (`alg`) under `secret`, by jose. */
const hmacToken = (alg: 'HS384' | 'HS512', secret: string) =>
  new SignJWT({ sub: 'alice' }).setProtectedHeader({ alg }).sign(new TextEncoder().encode(secret));
const JWT_HS384 = await hmacToken('HS384', 'secret');
const JWT_HS512 = await hmacToken('HS512', 'a longer secret');

/** Calls a host builtin by its OPA name, as a module importing it would. */
const call = (name: string, ...args: unknown[]): unknown => {
  const fn = hostBuiltins[hostImportName(name)];
  if (!fn) throw new Error(`no host builtin ${name}`);
  return fn(...args);
};

/** The JSON text a builtin returns for values JavaScript numbers cannot hold, parsed with exact integers. */
const jsonCall = (name: string, ...args: unknown[]): unknown => {
  const result = call(name, ...args);
  if (!(result instanceof ArrayBuffer)) return result;
  const text = new TextDecoder().decode(result);
  // Long integers outside strings become "<digits>n", then bigints.
  const marked = text.replace(/"(?:[^"\\]|\\.)*"|-?\d{16,}/g, (token) => (token.startsWith('"') ? token : `"${token}n"`));
  return JSON.parse(marked, (_k, v: unknown) =>
    typeof v === 'string' && /^-?\d+n$/.test(v) ? BigInt(v.slice(0, -1)) : v,
  );
};

/**
 * An integer builtin's result: the exact integer of the JSON text it returns in an ArrayBuffer
 * (what the SDK hands to the module), or whatever else it returned (undefined).
 */
const integerCall = (name: string, ...args: unknown[]): unknown => {
  const result = call(name, ...args);
  return result instanceof ArrayBuffer ? BigInt(new TextDecoder().decode(result)) : result;
};

t.test('every host builtin of the compiler is implemented, under the name modules import it by', async (t) => {
  const host = Object.entries(BUILTINS)
    .filter(([, spec]) => spec.impl === 'host')
    .map(([name]) => hostImportName(name));
  t.same(Object.keys(hostBuiltins).sort(), [...host, ...OPA_BUILT_MODULE_BUILTINS, ZONE_OFFSET_BUILTIN].sort(), 'and the zone offsets, and what modules built by opa import');
  for (const name of OPA_BUILT_MODULE_BUILTINS) t.equal(BUILTINS[name]?.impl, 'native', `${name} runs inside Gatehouse's modules`);
});

t.test('the zone offset and abbreviation the module asks for a named zone', async (t) => {
  const zone = (seconds: unknown, name: unknown) => call(ZONE_OFFSET_BUILTIN, seconds, name);
  t.same(zone(1577836800, 'America/New_York'), [-5 * 3600, 'EST'], 'winter');
  t.same(zone(1593561600, 'America/New_York'), [-4 * 3600, 'EDT'], 'summer');
  t.same(zone(1711846799, 'Europe/Paris'), [3600, 'CET'], 'the last second before daylight saving time');
  t.same(zone(1711846800, 'Europe/Paris'), [7200, 'CEST'], 'the first second of it');
  t.same(zone(1577836800, 'Asia/Kolkata'), [5.5 * 3600, 'IST']);
  t.same(zone(1577836800, 'UTC'), [0, 'UTC']);
  t.equal(zone(1577836800, 'Nowhere/Zone'), undefined, 'an unknown zone');
  t.equal(zone(1.5, 'UTC'), undefined);
  t.equal(zone(0, 1), undefined);
});

t.test('no host builtin is imported under a name the SDK answers itself', async (t) => {
  // @open-policy-agent/opa-wasm looks a module's builtin up in its own table before the ones
  // loadPolicy is given; its package exports do not reach that table, its file does.
  const require = createRequire(import.meta.url);
  const sdkDir = dirname(require.resolve('@open-policy-agent/opa-wasm'));
  const sdkAnswers = Object.keys(require(join(sdkDir, 'builtins', 'index.js')) as object);
  t.ok(sdkAnswers.includes('regex.split') && sdkAnswers.includes('yaml.marshal'), 'the SDK table was read');
  for (const name of sdkAnswers) t.ok(SDK_ANSWERED_BUILTINS.has(name), `${name} is known to be answered by the SDK`);
  for (const name of Object.keys(hostBuiltins)) t.notOk(sdkAnswers.includes(name), `${name} reaches Gatehouse's implementation`);
  t.equal(hostImportName('yaml.marshal'), 'gatehouse.yaml.marshal');
  t.equal(hostImportName('glob.match'), 'glob.match');
});

t.test('time.now_ns is nanoseconds since the epoch, fixed within one evaluation', async (t) => {
  const before = BigInt(Date.now()) * 1_000_000n;
  const now = integerCall('time.now_ns');
  t.type(now, 'bigint');
  t.ok((now as bigint) >= before && (now as bigint) <= BigInt(Date.now()) * 1_000_000n);
  t.type(call('time.now_ns'), ArrayBuffer, 'returned as JSON text, which the SDK passes through unrounded');

  const [a, b] = withEvaluationScope(() => {
    const first = integerCall('time.now_ns');
    const end = Date.now() + 3;
    while (Date.now() < end);
    return [first, integerCall('time.now_ns')];
  });
  t.equal(a, b, 'one value for the whole evaluation');
  const end = Date.now() + 3;
  while (Date.now() < end);
  t.not(integerCall('time.now_ns'), a, 'the clock runs again afterwards');
});

/** An HS256 token of `claims` signed with `secret`, made synchronously so that it can use an evaluation's time. */
const hs256Token = (claims: object): string => {
  const signed = ['{"alg":"HS256"}', JSON.stringify(claims)].map((part) => Buffer.from(part).toString('base64url')).join('.');
  return `${signed}.${createHmac('sha256', 'secret').update(signed).digest('base64url')}`;
};

t.test("io.jwt.decode_verify checks exp and nbf against the evaluation's time.now_ns", async (t) => {
  const valid = (claims: object, constraints: object = {}) =>
    (jsonCall('io.jwt.decode_verify', hs256Token(claims), { secret: 'secret', ...constraints }) as unknown[] | undefined)?.[0];
  withEvaluationScope(() => {
    const end = Date.now() + 3;
    while (Date.now() < end);
    const seconds = Number(integerCall('time.now_ns')) / 1e9;
    t.equal(valid({ nbf: seconds }), true, 'valid from nbf itself');
    t.equal(valid({ nbf: seconds + 0.001 }), false, 'not before nbf');
    t.equal(valid({ exp: seconds + 0.001 }), true, 'valid before exp');
    t.equal(valid({ exp: seconds }), false, 'expired at exp itself');
  });
  t.equal(valid({ exp: 2 }, { time: 1e9 }), true, 'a time constraint, in nanoseconds, replaces the clock');
  t.equal(valid({ exp: 1 }, { time: 1e9 }), false);
  t.equal(valid({ exp: 1 }, { time: -1 }), undefined, 'a negative time is an error');
  t.equal(call('io.jwt.decode_verify', 1, { secret: 'secret' }), undefined, 'not a token');
});

t.test('io.jwt.encode_sign_raw signs the text as given, which decode_verify reads back', async (t) => {
  const key = JSON.stringify({ kty: 'oct', k: Buffer.from('secret').toString('base64url') });
  const token = call('io.jwt.encode_sign_raw', '{"alg":"HS256"}', '{"sub": "alice"}', key) as string;
  t.equal(token.split('.')[1], Buffer.from('{"sub": "alice"}').toString('base64url'), 'the payload text, spaces kept');
  t.same(jsonCall('io.jwt.decode_verify', token, { secret: 'secret' }), [true, { alg: 'HS256' }, { sub: 'alice' }]);
  t.equal(call('io.jwt.encode_sign_raw', '{"alg":"HS256"}', { sub: 'alice' }, key), undefined, 'raw operands are strings');
  t.equal(call('io.jwt.encode_sign_raw', '{"alg":"RS256"}', '{}', key), undefined, 'an oct key cannot sign RS256');
});

t.test('time.parse_rfc3339_ns parses like Go time.RFC3339 (for modules built by opa)', async (t) => {
  for (const [text, ns, why] of RFC3339_CASES) t.equal(integerCall('time.parse_rfc3339_ns', text), ns, why ?? JSON.stringify(text));
  t.equal(new TextDecoder().decode(call('time.parse_rfc3339_ns', '1969-12-31T23:59:59Z') as ArrayBuffer), '-1000000000', 'JSON text');
});

t.test('time.format in a named zone: the offset, and for MST the abbreviation, as Go writes them', async (t) => {
  const ns = 1257894000000000000; // 2009-11-10 23:00:00 UTC
  t.equal(jsonCall('time.format', [ns, 'Europe/Paris', '2006-01-02 15:04 -07:00']), '2009-11-11 00:00 +01:00');
  t.equal(jsonCall('time.format', [ns, 'America/New_York', 'Z0700 3PM']), '-0500 6PM');
  t.equal(jsonCall('time.format', [ns, 'Asia/Kolkata']), '2009-11-11T04:30:00+05:30');
  t.equal(jsonCall('time.format', [ns, 'UTC', 'MST']), 'UTC');
  // The system's zone database, as Go's time.LoadLocation reads it on Linux.
  t.equal(jsonCall('time.format', [ns, 'Europe/Paris', 'MST']), 'CET', "the database's name, not Intl's GMT+1");
  t.equal(jsonCall('time.format', [ns, 'America/New_York', 'RFC1123']), 'Tue, 10 Nov 2009 18:00:00 EST');
  t.equal(jsonCall('time.format', [1720000000000000000, 'America/New_York', 'MST -0700']), 'EDT -0400', 'daylight time');
  t.equal(jsonCall('time.format', [2541456000000000000, 'Europe/Paris', 'MST']), 'CEST', "past the file's transitions, by its rule");
  t.equal(jsonCall('time.format', [ns, 'Asia/Dubai', 'MST']), '+04', 'a zone whose name is its offset');
  t.equal(jsonCall('time.format', [-3000000000000000000, 'America/New_York', 'MST']), 'LMT', 'before the first transition: local mean time');
  t.equal(jsonCall('time.format', [ns, 'Nowhere/Zone', 'MST']), undefined, 'an unknown zone');
});

t.test('net.cidr_merge merges like OPA: adjacent and contained networks, classful addresses', async (t) => {
  const merge = (...addrs: unknown[]) => call('net.cidr_merge', addrs);
  t.same(merge('192.0.128.0/24', '192.0.129.0/24'), ['192.0.128.0/23']);
  t.same(merge('192.0.128.0/24', '192.0.128.0/24'), ['192.0.128.0/24'], 'duplicates');
  t.same(merge('192.0.128.0/24', '0.0.0.0/0'), ['0.0.0.0/0'], 'contained');
  t.same(merge('192.0.2.112/30', '192.0.2.116/31', '192.0.2.118/31'), ['192.0.2.112/29']);
  t.same(merge('192.0.2.112/31', '192.0.2.116/31', '192.0.2.118/31'), ['192.0.2.112/31', '192.0.2.116/30']);
  t.same(merge('192.0.129.0/24', '192.0.130.0/24'), ['192.0.129.0/24', '192.0.130.0/24'], 'touching but not alignable');
  t.same(merge('192.0.2.0/24', '192.0.3.0/24', 'fe80::/120'), ['192.0.2.0/23', 'fe80::/120'], 'both families');
  t.same(merge('::/0', '1.2.3.0/24', 'fe80::1/128'), ['::/0'], 'IPv4 lies in the IPv6 space');
  t.same(merge('2601:600:8a80:207e:a57d:7567:e2c9:e7b3/64', '2601:600:8a80:207e::1/128'), ['2601:600:8a80:207e::/64']);
  t.same(merge('2001:db8:0:0:1:0:0:1/128'), ['2001:db8::1:0:0:1/128'], 'Go writes the longest run of zero groups as ::');
  t.same(merge('192.0.128.0', '192.0.129.0'), ['192.0.128.0/23'], 'an address takes its classful mask');
  t.same(merge('10.1.2.3'), ['10.1.2.3/8'], 'a network joined with nothing keeps its address, unmasked');
  t.same(merge('10.1.2.3', '10.1.2.3'), ['10.0.0.0/8'], 'joined, it is written as the block it covers');
  t.same(merge('172.16.5.4', '192.168.1.1'), ['172.16.5.4/16', '192.168.1.1/24'], 'class B and C');
  t.same(merge('192.168.1.0/24', '::ffff:192.168.2.0/120'), ['192.168.1.0/24', '192.168.2.0/24'], 'IPv4-mapped IPv6 is IPv4');
  t.same(merge(), []);
  t.equal(merge('2001:db8::1'), undefined, 'an IPv6 address needs a prefix length');
  t.equal(merge('foo'), undefined);
  t.equal(merge('10.0.0.0/33'), undefined);
  t.equal(merge('10.0.0.0/8', 1), undefined);
  t.equal(call('net.cidr_merge', '10.0.0.0/8'), undefined, 'not an array or set');
  t.equal(call('net.cidr_merge', { a: '10.0.0.0/8' }), undefined);
});

t.test('uuid.rfc4122 gives a version 4 UUID, one per key within an evaluation', async (t) => {
  const uuid = call('uuid.rfc4122', 'a') as string;
  t.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.not(call('uuid.rfc4122', 'a'), uuid, 'outside an evaluation every call is new');
  const [a1, a2, b] = withEvaluationScope(() => [call('uuid.rfc4122', 'a'), call('uuid.rfc4122', 'a'), call('uuid.rfc4122', 'b')]);
  t.equal(a1, a2, 'the same key gives the same UUID');
  t.not(a1, b, 'another key another UUID');
  t.not(withEvaluationScope(() => call('uuid.rfc4122', 'a')), a1, 'the next evaluation starts afresh');
  t.not(withEvaluationScope(() => [call('uuid.rfc4122', 1), call('uuid.rfc4122', '1')]).reduce((x, y) => x === y), true, 'keys differ by type');
});

t.test('yaml.marshal writes what go-yaml v2 writes for the value', async (t) => {
  // The module hands the value over as its JSON text (hostTakesJsonText).
  const marshal = (v: unknown) => call('yaml.marshal', JSON.stringify(v));
  t.equal(marshal({ foo: 1, bar: ['Hello', 'World'] }), 'bar:\n- Hello\n- World\nfoo: 1\n', 'sequences under a key are not indented');
  t.equal(marshal({ a: { b: { c: [1, { d: 2, e: [] }, [3, 4]] } }, z: {} }),
    'a:\n  b:\n    c:\n    - 1\n    - d: 2\n      e: []\n    - - 3\n      - 4\nz: {}\n');
  t.equal(marshal({ a10: 1, a9: 2, B: 3, _x: 4, b: 5 }), '_x: 4\nB: 3\na9: 2\na10: 1\nb: 5\n', 'natural key order');
  t.equal(marshal([]), '[]\n');
  t.equal(marshal({}), '{}\n');
  t.equal(marshal(null), 'null\n');
  t.equal(marshal(true), 'true\n');
  t.equal(marshal(42), '42\n');
  t.equal(marshal(1.5), '1.5\n');
  t.equal(marshal(1000000.5), '1.0000005e+06\n', "floats as Go's %g");
  t.equal(marshal(0.00001), '1e-05\n');
  t.equal(marshal('abc'), 'abc\n');
  t.equal(marshal('it\'s a#b'), "it's a#b\n");
  for (const s of ['yes', 'No', 'on', 'y', 'true', 'null', '~', '123', '0x1F', '1e3', '.5', '2006-01-02', '1:20', '']) {
    t.equal(marshal(s), `"${s}"\n`, `${JSON.stringify(s)} would read back as another type: double-quoted`);
  }
  for (const s of ['a: b', '- x', '#c', 'a #b', ' lead', 'trail ', '[x', '&a', '*a', '!a', '|a', '>a', "'a", '"a', '%a', '@a', '`a', '---', '? x', 'key:']) {
    t.equal(marshal(s), `'${s.replace(/'/g, "''")}'\n`, `${JSON.stringify(s)} cannot be plain: single-quoted`);
  }
  t.equal(marshal('a:b'), 'a:b\n', 'a colon not followed by a space is plain');
  t.equal(marshal('tab\there'), '"tab\\there"\n', 'a character that is not printable is escaped');
  t.equal(marshal('😀 x'), '"\\U0001F600 x"\n', 'go-yaml escapes characters beyond the BMP');
  t.equal(marshal('é'), 'é\n');
  t.equal(marshal('line1\nline2'), '|-\n  line1\n  line2\n', 'text with line breaks is a literal block');
  t.equal(marshal('ends\n'), '|\n  ends\n');
  t.equal(marshal('ends\n\n'), '|+\n  ends\n\n');
  t.equal(marshal(' indented\nx'), '|2-\n   indented\n  x\n', 'an indentation hint for a leading space');
  t.equal(marshal('trailing \nx'), '"trailing \\nx"\n', 'a space before a break rules out the block');
  t.equal(marshal({ k: 'a\nb', l: ['c\nd'] }), 'k: |-\n  a\n  b\nl:\n- |-\n  c\n  d\n');
  t.equal(marshal({ 'a\nb': 1 }), '? |-\n  a\n  b\n: 1\n', 'a key spanning lines is a complex key');
  const words = Array(30).fill('word').join(' ');
  t.equal(marshal({ text: words }),
    'text: word word word word word word word word word word word word word word word word\n  word word word word word word word word word word word word word word\n',
    'plain text folds at the first space past column 80');
  const key = Array(24).fill('word').join(' ');
  t.equal(marshal({ [key]: 1 }), `${key}: 1\n`, 'keys of up to 128 bytes never fold');
  t.equal(marshal({ [words]: 1 }), `? ${words.slice(0, 79)}\n  ${words.slice(80)}\n: 1\n`, 'a longer key is a complex key, and folds');
  t.equal(marshal('\u007f'), undefined, 'go-yaml refuses to read DEL');
  t.equal(call('yaml.marshal', '1e400'), undefined, 'beyond the float range');
  t.equal(call('yaml.marshal', '[1e6, 1000000.0, 1000000, 1.0, 18446744073709551615, 18446744073709551616]'),
    '- 1e+06\n- 1e+06\n- 1000000\n- 1\n- 18446744073709551615\n- 1.8446744073709552e+19\n',
    'a number written as a float is a float for go-yaml; an integer beyond uint64 too');
  t.equal(call('yaml.marshal', 1), undefined, 'not JSON text');
});

t.test('yaml.unmarshal reads YAML 1.1 as go-yaml v2 and sigs.k8s.io/yaml do', async (t) => {
  const unmarshal = (s: unknown) => jsonCall('yaml.unmarshal', s);
  t.same(unmarshal('foo: 1\nbar: [Hello, World]\n'), { foo: 1, bar: ['Hello', 'World'] });
  t.same(unmarshal('a: yes\nb: off\nc: y\nd: True\ne: ~\nf: null\ng:\n'), { a: true, b: false, c: true, d: true, e: null, f: null, g: null },
    'YAML 1.1 booleans and nulls');
  t.same(unmarshal('a: 0x1F\nb: 017\nc: 0o17\nd: 0b101\ne: 1_000\nf: +5\ng: -0x10\n'), { a: 31, b: 15, c: 15, d: 5, e: 1000, f: 5, g: -16 },
    'integers as strconv.ParseInt(s, 0, 64) reads them, underscores dropped');
  t.same(unmarshal('a: 1e3\nb: .5\nc: 1.\nd: 08\n'), { a: 1000, b: 0.5, c: 1, d: 8 }, 'floats');
  t.same(unmarshal('a: 1:20\nb: 2001-12-14\nc: 2001-12-14T21:59:43.10Z\nd: "1"\ne: \'true\'\nf: 1e400\n'),
    { a: '1:20', b: '2001-12-14', c: '2001-12-14T21:59:43.10Z', d: '1', e: 'true', f: '1e400' },
    'no sexagesimal numbers; dates, quoted scalars and overflowing floats stay strings');
  t.same(unmarshal('big: 9223372036854775807\nneg: -9223372036854775808\nu: 18446744073709551615\n'),
    { big: 9223372036854775807n, neg: -9223372036854775808n, u: 18446744073709551615n }, 'exact 64-bit integers');
  t.same(unmarshal('1: a\n1.5: b\ntrue: c\n0.1: d\n'), { 1: 'a', '1.5': 'b', true: 'c', '0.1': 'd' }, 'keys that are not strings become their text');
  t.same(unmarshal('base: &b {p: 1, q: 2}\nd:\n  <<: *b\n  q: 3\n'), { base: { p: 1, q: 2 }, d: { p: 1, q: 3 } }, 'merge keys');
  t.same(unmarshal('y: 1\nno: 2\n'), { true: 1, false: 2 }, 'y and no are YAML 1.1 booleans, keys included');
  t.same(unmarshal('a: &a {x: 1}\nb: &b {x: 2, z: 2}\nc:\n  <<: [*a, *b]\n'), { a: { x: 1 }, b: { x: 2, z: 2 }, c: { x: 1, z: 2 } },
    'in a list of merged maps the first wins');
  t.same(unmarshal('a: 1\na: 2\n'), { a: 2 }, 'a repeated key: the last value');
  t.same(unmarshal('a: !!int "5"\nb: !!float 1\nc: !!str 1\nd: !foo 12\ne: !!binary aGVsbG8=\n'), { a: 5, b: 1, c: '1', d: '12', e: 'hello' }, 'tags');
  t.same(unmarshal('a: 1\n---\nb: 2\n'), { a: 1 }, 'the first document only');
  t.same(unmarshal('- |\n  text\n- >\n  folded\n  line\n'), ['text\n', 'folded line\n'], 'block scalars');
  t.equal(unmarshal(''), null, 'an empty stream is null');
  t.equal(unmarshal('# only a comment\n'), null);
  t.equal(unmarshal('123'), 123);
  t.equal(unmarshal('{ , }'), undefined, 'syntax error');
  t.equal(unmarshal('a:\n\tb: 1\n'), undefined, 'tabs do not indent');
  t.equal(unmarshal('? [1]\n: 2\n'), undefined, 'a collection as a key');
  t.equal(unmarshal('~: 1\n'), undefined, 'a null key');
  t.equal(unmarshal('18446744073709551615: 1\n'), undefined, 'a key beyond int64 (a uint64)');
  t.same(unmarshal('18446744073709551616: 1\n'), { '1.8446744e+19': 1 }, 'a key beyond uint64 is a float, written as a float32');
  t.equal(unmarshal('a: !!int x\n'), undefined, 'a tag the text does not fit');
  t.equal(unmarshal('a: .inf\n'), undefined, 'JSON has no infinity');
  t.equal(unmarshal('a: &a [*a]\n'), undefined, 'an alias of its own ancestor');
  t.equal(unmarshal('a: *nope\n'), undefined, 'an undefined alias');
  t.equal(unmarshal(1), undefined);
  t.same(call('yaml.is_valid', 'a: [1, 2]'), true);
  t.same(call('yaml.is_valid', 'a: [1, 2'), false);
  t.same(call('yaml.is_valid', '~: 1'), false, 'valid YAML sigs.k8s.io/yaml cannot turn into JSON');
  t.same(call('yaml.is_valid', 1), false, 'not a string');
});

/** Calls of each builtin the host answers for modules built by `opa build`, as JSON operands. */
const OPA_BUILT_SAMPLES: Record<string, unknown[][]> = {
  'time.parse_rfc3339_ns': [['2021-01-01T00:00:00.5+02:00'], ['2021-02-30T00:00:00Z']],
  'time.parse_duration_ns': [['1h30m'], ['-1.5s'], ['5']],
  'time.add_date': [[1609459200000000000, 0, 1, 30]],
  'time.date': [[1577836800000000000], [[1577836800000000000, 'America/New_York']]],
  'time.clock': [[1577840523000000000]],
  'time.weekday': [[1577836800000000000], [[1577836800000000000, 'Asia/Tokyo']]],
  'time.diff': [[1577836800000000000, 1614834367000000000]],
  'time.parse_ns': [['RFC822Z', '02 Jun 17 19:00 -0700'], ['2006-01-02', '2021-02-30']],
  'time.format': [[1577836800000000000], [[1577836800000000000, 'Asia/Kolkata', 'RFC1123Z']]],
  'crypto.md5': [['grüße'], ['']],
  'crypto.sha1': [['grüße'], ['']],
  'crypto.sha256': [['grüße'], ['']],
  'crypto.hmac.md5': [['grüße', 'schlüssel']],
  'crypto.hmac.sha1': [['grüße', 'schlüssel']],
  'crypto.hmac.sha256': [['grüße', '']],
  'crypto.hmac.sha512': [['', 'k']],
  'crypto.hmac.equal': [['abc', 'abc'], ['abc', 'abd'], ['abc', 'ab']],
  'io.jwt.decode': [[JWT_HS256], ['not.a.token']],
  'io.jwt.verify_hs256': [[JWT_HS256, 'secret'], [JWT_HS256, 'wrong']],
  'io.jwt.verify_hs384': [[JWT_HS384, 'secret'], [JWT_HS384, 'wrong'], [JWT_HS256, 'secret']],
  'io.jwt.verify_hs512': [[JWT_HS512, 'a longer secret'], [JWT_HS512, 'secret']],
  'semver.is_valid': [['1.2.3-rc.1+build'], ['v1.2.3'], [7]],
  'semver.compare': [['1.9.0-rc.1', '1.10.0'], ['1.0.0', '1.0.0+x']],
  'units.parse_bytes': [['1.5Gi'], ['10KB'], ['1 KB']],
  'units.parse': [['250m'], ['1.5Gi'], ['3M']],
  'uuid.parse': [['c2fc67c2-47f2-11ee-b67a-9f3619c7493f'], ['{00000000-0000-4000-8000-000000000000}'], ['nope']],
  'regex.find_n': [['[0-9]+', 'a1b22c333', 2], ['a*', 'baaab', -1], ['(', 'x', 1]],
  'hex.encode': [['grüße'], ['']],
  'hex.decode': [['67C3BC'], ['abc'], ['zz']],
  'object.union_n': [[[{ a: { b: 1 }, c: 1 }, { a: { d: 2 } }, { c: [3] }]], [[]], [[{ a: 1 }, 2]]],
  'indexof_n': [['héllo wörld', 'l'], ['aaa', 'aa'], ['abc', '']],
  'numbers.range_step': [[0, 10, 3], [5, 1, 2], [0, 1, 0]],
  'json.marshal_with_options': [[{ a: [1, {}], b: '<é>' }, { indent: '  ', prefix: '> ' }], [[1], { pretty: 'x' }], [[], { pretty: true }]],
  'urlquery.encode': [['a b&é~']],
  'urlquery.decode': [['a+b%26%C3%A9'], ['%zz']],
  'urlquery.encode_object': [[{ b: ['x y', ''], a: 'é', c: [] }], [{ a: 1 }]],
  'urlquery.decode_object': [['a=1&b&a=%C3%A9'], ['a=1;b=2']],
  'glob.quote_meta': [['*.{a,b}[c]?\\é']],
  'net.cidr_is_valid': [['10.0.0.0/8'], ['fd1e::/64'], ['10.0.0.0/33'], [8]],
  'net.cidr_contains_matches': [[['1.1.2.0/24', ['1.1.1.0/24', 'x']], { a: '1.1.1.1', b: ['1.1.2.1', 2] }], [[], [1]], [['1.1.1.0/24'], [[]]]],
  'net.cidr_expand': [['10.0.0.254/31'], ['::ffff:10.0.0.0/127'], ['2001:db8::/127'], ['10.0.0.0/33']],
  'regex.template_match': [['urn:foo.bar:{[a-z]+}', 'urn:foo.bar:abc', '{', '}'], ['a.<.>', 'abcd', '<', '>'], ['a{', 'a', '{', '}'], ['a', 'a', '{{', '}']],
  'regex.globs_match': [['a.a.[0-9]+z', '.b.b2359825792*594823z'], ['[a-z]+', '[0-9]*'], ['pqrs]', '[a-b]+'], ['é+', '[à-ú]']],
  'graph.reachable_paths': [[{ a: ['b', 'c'], b: ['c'], c: [] }, ['a']], [{ a: ['a'] }, ['a', 'z']], [1, ['a']]],
  'regex.replace': [['ann@example.com', '(?P<user>\\w+)@(\\w+)', '${2}:$user'], ['héllo', '(?i)L', 'x']],
};

t.test('the host answers modules built by opa with the policy runtime Gatehouse modules run', async (t) => {
  t.same(Object.keys(OPA_BUILT_SAMPLES).sort(), [...OPA_BUILT_MODULE_BUILTINS].sort(), 'every such builtin is sampled');
  const calls = Object.entries(OPA_BUILT_SAMPLES).flatMap(([name, samples]) => samples.map((args) => ({ name, args })));
  const rules = calls.map(({ name, args }, i) => `r${i} := ${name}(${args.map((a) => JSON.stringify(a)).join(', ')})`).join('\n');
  const root = t.testdir({ src: { 'sampled-v1.rego': `package sampled\n\n${rules}\n` } });
  const engine = await PolicyEngine.open({ sourceDir: join(root, 'src'), buildDir: join(root, 'build') });
  t.teardown(() => engine.close());
  const module = engine.evaluate('sampled-v1', {}).value as Record<string, unknown>;
  calls.forEach(({ name, args }, i) => {
    const host = jsonCall(name, ...args);
    const exact = (v: unknown) => JSON.parse(JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? Number(x) : x)));
    t.same(host === undefined ? undefined : exact(host), module[`r${i}`], `${name}(${args.map((a) => JSON.stringify(a)).join(', ')})`);
  });
});
