import { createHash, createHmac } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t, { type Test } from 'tap';
import { loadPolicy } from '@open-policy-agent/opa-wasm';
import { PolicyEngine } from '../policies/engine/index.ts';

// walk, json.patch, yaml.*, regex.split, uuid.* and net.cidr_merge in a policy built from Rego,
// loaded and evaluated by the engine as the server does.

// Building compiles a real module (and, on a fresh checkout, the runtime first).
t.setTimeout(300_000);

/**
 * Builds policy `name` from `source` with the engine (closed at the test's end), and loads its
 * module again with a plain `loadPolicy(bytes)`: no builtins handed to the SDK, which fails any
 * call to one it lacks.
 */
async function engineAndPlain(t: Test, name: string, source: string) {
  const root = t.testdir({ src: { [`${name}.rego`]: source } });
  const buildDir = path.join(root, 'build');
  const engine = await PolicyEngine.open({ sourceDir: path.join(root, 'src'), buildDir });
  t.teardown(() => engine.close());
  const manifest = JSON.parse(await readFile(path.join(buildDir, 'manifest.json'), 'utf8'));
  const plain = await loadPolicy(await readFile(path.join(buildDir, manifest.policies[name].module)));
  return { engine, plain };
}

const POLICY = `package gatehouse.builtins.v1

# Every path of the request whose value is a string that looks like a secret.
secret_paths contains p if {
	walk(input.request, [p, v])
	is_string(v)
	startswith(v, "sk_")
}

patched := json.patch(input.request, [
	{"op": "replace", "path": "/user/role", "value": "viewer"},
	{"op": "add", "path": "/user/tags/-", "value": "reviewed"},
	{"op": "remove", "path": "/token"},
])

manifest := yaml.marshal({"name": input.request.user.name, "enabled": "yes", "tags": input.request.user.tags})

config := yaml.unmarshal(input.config)

parts := regex.split("(\\\\d)", "a1b2c")

request_id := uuid.rfc4122("request")

same_request_id if uuid.rfc4122("request") == request_id

id_version := uuid.parse(request_id).version

allowed_networks := net.cidr_merge(input.networks)

network_is_set if is_set(allowed_networks)
`;

const REQUEST = { user: { name: 'ann', role: 'admin', tags: ['dev'] }, token: 'sk_live_1', headers: { auth: 'sk_test_2', host: 'x' } };

t.test('the new builtins answer through the engine as OPA does', async (t) => {
  const root = t.testdir({ src: { 'builtins-v1.rego': POLICY } });
  const buildDir = path.join(root, 'build');
  const engine = await PolicyEngine.open({ sourceDir: path.join(root, 'src'), buildDir });
  t.teardown(() => engine.close());

  const input = { request: REQUEST, config: 'limits:\n  max: 5\n  strict: on\n', networks: ['10.0.0.0/24', '10.0.1.0/24', '192.168.0.1'] };
  const evaluation = engine.evaluate('builtins-v1', input);
  t.equal(evaluation.error, undefined);
  const doc = evaluation.value as Record<string, unknown>;
  t.same(doc.secret_paths, [['headers', 'auth'], ['token']], 'walk with an output pattern');
  t.same(doc.patched, { user: { name: 'ann', role: 'viewer', tags: ['dev', 'reviewed'] }, headers: REQUEST.headers });
  t.equal(doc.manifest, 'enabled: "yes"\nname: ann\ntags:\n- dev\n', "go-yaml's output, not the SDK's JavaScript YAML");
  t.same(doc.config, { limits: { max: 5, strict: true } }, 'YAML 1.1: on is true');
  t.same(doc.parts, ['a', 'b', 'c'], "Go's Split, not JavaScript's, which keeps groups");
  t.match(doc.request_id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.equal(doc.same_request_id, true, 'one UUID per key within an evaluation');
  t.equal(doc.id_version, 4);
  t.same(doc.allowed_networks, ['10.0.0.0/23', '192.168.0.1/24']);
  t.equal(doc.network_is_set, true, 'a host builtin answering a set gives a set');

  const next = engine.evaluate('builtins-v1', input, 'gatehouse/builtins/v1/request_id');
  t.not(next.value, doc.request_id, 'the next evaluation has its own UUIDs');

  const undefinedCases = engine.evaluate('builtins-v1', { request: { user: {} }, config: '{ , }', networks: ['2001:db8::1'] });
  t.equal(undefinedCases.error, undefined, 'builtins given what they refuse are undefined, not errors');
  const partial = undefinedCases.value as Record<string, unknown>;
  for (const rule of ['patched', 'config', 'allowed_networks', 'network_is_set']) t.equal(partial[rule], undefined, `${rule} is undefined`);

  t.test('the module names the SDK-answered builtins so the SDK cannot answer them', async (t) => {
    const manifest = JSON.parse(await readFile(path.join(buildDir, 'manifest.json'), 'utf8'));
    const wasm = await readFile(path.join(buildDir, manifest.policies['builtins-v1'].module));
    const plain = await loadPolicy(wasm);
    t.throws(
      () => plain.evaluate(input, 'gatehouse/builtins/v1/manifest'),
      /gatehouse\.yaml\.marshal/,
      'without Gatehouse the call fails instead of answering with JavaScript YAML',
    );
    t.same(plain.evaluate(input, 'gatehouse/builtins/v1/patched'), [{ result: doc.patched }], 'json.patch runs inside the module');
    t.same(plain.evaluate(input, 'gatehouse/builtins/v1/secret_paths'), [{ result: doc.secret_paths }], 'so does walk');
  });
});

// Builtins that run inside the module: a module using them answers the same loaded by a plain
// \`loadPolicy(bytes)\`, with no builtins handed to it.
const STANDALONE = `package gatehouse.standalone.v1

cases := [lower("ÀB İ"), upper("straße ǆ"), net.cidr_contains("10.0.0.0/8", "::ffff:10.1.2.3"), net.cidr_contains("2001:db8::/32", "2001:db9::/48"), glob.match("api.**.{com,org}", [], "api.a.b.org"), glob.match("*.com", null, "a.b.com"), glob.match("*.com", [], "a.b.com")]

times := [
	time.parse_rfc3339_ns("2021-01-01T00:00:00.000000001Z") - time.parse_rfc3339_ns("2021-01-01T00:00:00Z"),
	time.parse_duration_ns("1h30m"),
	time.add_date(1609459200000000001, 0, 1, 0) == 1612137600000000001,
	time.date([1577836800000000000, "UTC"]),
	time.clock(1577840523000000000),
	time.weekday(1577836800000000000),
	time.diff(1577836800000000000, 1614834367000000000),
	time.format([1257894000000000000, "UTC", "RFC1123"]),
	time.parse_ns("2006-01-02", "2021-01-01") == 1609459200000000000,
]

in_new_york := time.date([1577836800000000000, "America/New_York"])
`;

t.test('a module using the builtins Gatehouse runs natively answers under a plain loadPolicy', async (t) => {
  const { engine, plain } = await engineAndPlain(t, 'standalone-v1', STANDALONE);
  t.same(plain.evaluate({}, 'gatehouse/standalone/v1/cases'), [{ result: ['àb i', 'STRAßE Ǆ', true, false, true, true, false] }]);
  t.same(engine.evaluate('standalone-v1', {}, 'gatehouse/standalone/v1/cases').value, ['àb i', 'STRAßE Ǆ', true, false, true, true, false], 'as the engine answers');

  // Nanoseconds beyond 2^53 are compared inside the policy, where they are exact.
  const times = [1, 5400000000000, true, [2020, 1, 1], [1, 2, 3], 'Wednesday', [1, 2, 3, 5, 6, 7], 'Tue, 10 Nov 2009 23:00:00 UTC', true];
  t.same(plain.evaluate({}, 'gatehouse/standalone/v1/times'), [{ result: times }], 'the time builtins, in UTC');
  t.same(engine.evaluate('standalone-v1', {}, 'gatehouse/standalone/v1/times').value, times, 'as the engine answers');
  t.throws(() => plain.evaluate({}, 'gatehouse/standalone/v1/in_new_york'), /not implemented.*gatehouse\.time\.zone_offset/, 'a named zone needs the host, and says so');
  t.same(engine.evaluate('standalone-v1', {}, 'gatehouse/standalone/v1/in_new_york').value, [2019, 12, 31], 'which the engine is');
});

// The crypto, token, version, unit and uuid builtins, which also run inside the module: no
// builtins are handed to the SDK, which fails any call to one it lacks.
const STANDALONE_PURE = `package gatehouse.standalone.v1

digests := [crypto.md5(input.text), crypto.sha1(input.text), crypto.sha256(input.text)]

macs := [crypto.hmac.md5(input.text, input.key), crypto.hmac.sha1(input.text, input.key), crypto.hmac.sha256(input.text, input.key), crypto.hmac.sha512(input.text, input.key)]

macs_equal := [crypto.hmac.equal(macs[0], macs[0]), crypto.hmac.equal(macs[0], macs[1])]

token := io.jwt.decode(input.token)

token_verified := [io.jwt.verify_hs256(input.token, "secret"), io.jwt.verify_hs256(input.token, "wrong")]

versions := [semver.is_valid(input.version), semver.compare(input.version, "1.10.0")]

sizes := [units.parse_bytes(input.size), units.parse(input.size), units.parse("250m")]

id := uuid.parse(input.id)
`;

t.test('a module using the crypto, token, version, unit and uuid builtins answers under a plain loadPolicy', async (t) => {
  const { engine, plain } = await engineAndPlain(t, 'standalone-v1', STANDALONE_PURE);

  const input = {
    text: 'grüße',
    key: 'schlüssel',
    token: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhbGljZSIsImlzcyI6ImdhdGVob3VzZSIsImFkbWluIjp0cnVlfQ.NtYISo5tfydUUZBl4BSoZqGVkK__4te_NZyc7DiPlnA',
    version: '1.9.0-rc.1',
    size: '1.5Gi',
    id: 'c2fc67c2-47f2-11ee-b67a-9f3619c7493f',
  };
  const [{ result }] = plain.evaluate(input, 'gatehouse/standalone/v1') as Array<{ result: Record<string, unknown> }>;
  const mac = (algorithm: string) => createHmac(algorithm, input.key).update(input.text).digest('hex');
  t.same(result.digests, ['md5', 'sha1', 'sha256'].map((a) => createHash(a).update(input.text).digest('hex')));
  t.same(result.macs, ['md5', 'sha1', 'sha256', 'sha512'].map(mac));
  t.same(result.macs_equal, [true, false]);
  t.same(result.token, [{ alg: 'HS256', typ: 'JWT' }, { sub: 'alice', iss: 'gatehouse', admin: true }, '36d6084a8e6d7f2754519065e014a866a19590afffe2d7bf359c9cec388f9670']);
  t.same(result.token_verified, [true, false]);
  t.same(result.versions, [true, -1]);
  t.same(result.sizes, [1610612736, 1610612736, 0.25]);
  t.match(result.id, { version: 1, variant: 'RFC4122', nodeid: '9f-36-19-c7-49-3f', macvariables: 'local:multicast', clocksequence: 13946 });
  t.same(engine.evaluate('standalone-v1', input).value, result, 'the engine answers the same');
});

const REGEX_POLICY = `package gatehouse.regex.v1

matches := [regex.match(\`^[a-z]+\\d*$\`, "ann42"), regex.match("(?i)^ADMIN$", "admin"), regex.match("^b", "abc")]

valid := [regex.is_valid("a(b|c)*"), regex.is_valid("(a)\\\\1"), regex.is_valid(1)]

found := regex.find_n("[0-9]+", "a1b22c333", 2)

groups := regex.find_all_string_submatch_n("(\\\\w)(\\\\d)?", "a1 b", -1)

replaced := regex.replace("ann@example.com", "(?P<user>\\\\w+)@(\\\\w+)", "\${2}:$user")

parts := regex.split("(\\\\d)", "a1b2c")

split_unicode := regex.split("\\\\s+", "héllo  wörld")
`;

t.test('a module using the regex builtins answers under a plain loadPolicy, with no builtins of the host', async (t) => {
  const { engine, plain } = await engineAndPlain(t, 'regex-v1', REGEX_POLICY);
  const want = {
    matches: [true, true, false],
    valid: [true, false, false],
    found: ['1', '22'],
    groups: [['a1', 'a', '1'], ['b', 'b', '']],
    replaced: 'example:ann.com',
    parts: ['a', 'b', 'c'],
    split_unicode: ['héllo', 'wörld'],
  };
  for (const [rule, result] of Object.entries(want)) {
    t.same(plain.evaluate({}, `gatehouse/regex/v1/${rule}`), [{ result }], `${rule} inside the module`);
  }
  t.same(engine.evaluate('regex-v1', {}).value, want, 'and the same through the engine');
});
