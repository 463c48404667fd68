/**
 * OPA bundles as OPA treats them: the manifest's revision (reported), roots (data and modules
 * outside them refused) and `wasm` entries, and signed bundles (`.signatures.json`: a JWT over
 * the files' digests) verified against configured JWKs, each refusal with its reason while the
 * other policies load.
 */
import { createHash, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CompactSign, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import t, { type Test } from 'tap';
import { openPolicies, settings } from '../cli/commands/serve.ts';
import { PolicyEngine, readBundleVerificationKeys, type BundleVerificationKeys } from '../policies/engine/index.ts';
import { writeBundle } from './fixtures/bundle.ts';
import { opaAbiFixture } from './fixtures/opa-abi-module.ts';
import { call, issueKey, startTestServer } from './helpers/gatehouse.ts';

t.setTimeout(120_000);

type Files = Record<string, Uint8Array | string>;
type SigningKey = CryptoKey | Uint8Array;

const sha256 = (content: Uint8Array | string): string => createHash('sha256').update(content).digest('hex');

interface Signer {
  kid: string;
  alg: string;
  key: SigningKey;
  jwk: JWK;
}

async function signer(kid: string, alg: 'RS256' | 'ES256' | 'EdDSA'): Promise<Signer> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, key: privateKey, jwk: await exportJWK(publicKey) };
}

function hmacSigner(kid: string): Signer {
  const secret = randomBytes(32);
  return { kid, alg: 'HS256', key: secret, jwk: { kty: 'oct', k: secret.toString('base64url') } };
}

interface SignOptions {
  /** Entries of the payload's `files` (default: every file, SHA-256 of its bytes). */
  files?: { name: string; hash: string; algorithm: string }[];
  /** Put the key id in the deprecated `keyid` claim instead of the `kid` header. */
  keyidClaim?: boolean;
  claims?: Record<string, unknown>;
}

/**
 * `/.signatures.json` for `files` as `opa sign` writes it. The digests are SHA-256 over the bytes
 * as written, which is OPA's digest for the JSON files too when they are written canonically
 * (sorted keys, no spaces), as every test bundle here is unless it says otherwise.
 */
async function signatures(files: Files, by: Signer, options: SignOptions = {}): Promise<string> {
  const listed = options.files ?? Object.entries(files).map(([name, content]) => ({ name, hash: sha256(content), algorithm: 'SHA-256' }));
  const payload = { files: listed, iat: 1_700_000_000, iss: 'test', ...(options.keyidClaim ? { keyid: by.kid } : {}), ...options.claims };
  const header = options.keyidClaim ? { alg: by.alg } : { alg: by.alg, kid: by.kid };
  const jwt = await new CompactSign(new TextEncoder().encode(JSON.stringify(payload))).setProtectedHeader(header).sign(by.key);
  return JSON.stringify({ signatures: [jwt] });
}

async function signedBundle(dir: string, name: string, files: Files, by: Signer, options?: SignOptions): Promise<void> {
  await writeBundle(path.join(dir, `${name}.tar.gz`), { ...files, '.signatures.json': await signatures(files, by, options) });
}

const wasmFiles = (extra: Files = {}): Files => ({ 'policy.wasm': opaAbiFixture(), ...extra });
/** Rego as `opa build` puts it in a bundle beside the module. */
const RELEASED_REGO = 'package released\n\nallow := true\n';

function keysOf(...signers: Signer[]): BundleVerificationKeys {
  return new Map(signers.map((s) => [s.kid, s.jwk]));
}

async function open(t: Test, buildDir: string, bundleVerificationKeys?: BundleVerificationKeys): Promise<PolicyEngine> {
  const engine = await PolicyEngine.open({ buildDir, bundleVerificationKeys, log: { info: () => {}, error: () => {} } });
  t.teardown(() => engine.close());
  return engine;
}

/** Bundle name → why it was not loaded. */
function refusals(engine: PolicyEngine, dir: string): Record<string, string> {
  return Object.fromEntries([...engine.loadFailures()].map(([file, reason]) => [path.relative(dir, file).replace(/\.tar\.gz$/, ''), reason]));
}

t.test('the manifest: revision reported, roots and wasm entries enforced as OPA does', async (t) => {
  const dir = t.testdir();
  const manifest = (doc: unknown): string => JSON.stringify(doc);
  const bundles: Record<string, Files> = {
    'rooted-v1': wasmFiles({
      '.manifest': manifest({ revision: 'r-2024-06-01', roots: ['fixture', '/limits/'], wasm: [{ entrypoint: 'fixture/data', module: '/policy.wasm' }] }),
      'data.json': JSON.stringify({ fixture: { on: true } }),
      'limits/data.json': JSON.stringify({ max: 5 }),
      'fixture/policy.rego': 'package fixture\n\nallow := true\n',
      'limits/extra.rego': '# a comment first\npackage limits["per-user"]\n',
    }),
    'no-revision-v1': wasmFiles({ '.manifest': manifest({ roots: [''] }), 'data.json': JSON.stringify({ anything: 1 }) }),
    'data-outside-v1': wasmFiles({ '.manifest': manifest({ roots: ['fixture'] }), 'data.json': JSON.stringify({ fixture: {}, other: 1 }) }),
    'nested-outside-v1': wasmFiles({ '.manifest': manifest({ roots: ['a/b'] }), 'a/c/data.json': JSON.stringify({ x: 1 }) }),
    'empty-roots-v1': wasmFiles({ '.manifest': manifest({ revision: 'r1', roots: [] }) }),
    'overlap-v1': wasmFiles({ '.manifest': manifest({ roots: ['a', 'a/b'] }) }),
    'module-outside-v1': wasmFiles({ '.manifest': manifest({ roots: ['fixture'] }), 'authz.rego': 'package authz.rules\n' }),
    'missing-entrypoint-v1': wasmFiles({ '.manifest': manifest({ wasm: [{ entrypoint: 'fixture/nope', module: '/policy.wasm' }] }) }),
    'entrypoint-outside-v1': wasmFiles({ '.manifest': manifest({ roots: ['fixture'], wasm: [{ entrypoint: 'other/allow', module: '/policy.wasm' }] }) }),
    'absent-module-v1': wasmFiles({ '.manifest': manifest({ wasm: [{ entrypoint: 'fixture/data', module: '/a/policy.wasm' }] }) }),
    'other-module-v1': wasmFiles({ '.manifest': manifest({ wasm: [{ entrypoint: 'x/y', module: '/x/policy.wasm' }] }), 'x/policy.wasm': opaAbiFixture() }),
    'bad-manifest-v1': wasmFiles({ '.manifest': manifest({ revision: 7 }) }),
  };
  for (const [name, files] of Object.entries(bundles)) await writeBundle(path.join(dir, `${name}.tar.gz`), files);
  const engine = await open(t, dir);

  t.same(engine.names(), ['no-revision-v1', 'rooted-v1'], 'the bundles OPA would accept load');
  t.equal(engine.info('rooted-v1').revision, 'r-2024-06-01', "the manifest's revision is reported");
  t.notOk('revision' in engine.info('no-revision-v1'), 'no revision, none reported');
  t.same(engine.evaluate('rooted-v1', {}).value, { fixture: { on: true }, limits: { max: 5 } }, 'data inside the roots is loaded');
  t.same(refusals(engine, dir), {
    'data-outside-v1': `manifest roots ["fixture"] do not permit data at path '/other'`,
    'nested-outside-v1': `manifest roots ["a/b"] do not permit data at path '/a/c/x'`,
    'empty-roots-v1': `manifest roots [] do not permit data at path '/'`,
    'overlap-v1': `manifest has overlapped roots: 'a' and 'a/b'`,
    'module-outside-v1': `manifest roots ["fixture"] do not permit 'package authz.rules' in module '/authz.rego'`,
    'missing-entrypoint-v1': `manifest maps entrypoint(s) 'fixture/nope' to /policy.wasm, which has no such entrypoint`,
    'entrypoint-outside-v1': `manifest roots ["fixture"] do not permit 'other/allow' entrypoint for wasm module '/policy.wasm'`,
    'absent-module-v1': `manifest references wasm module '/a/policy.wasm' but the module file does not exist`,
    'other-module-v1': `manifest maps entrypoint 'x/y' to '/x/policy.wasm', and only /policy.wasm is served`,
    'bad-manifest-v1': '/.manifest: /revision: Expected string',
  });
});

t.test('data.yaml documents load as OPA reads YAML', async (t) => {
  const dir = t.testdir();
  await writeBundle(path.join(dir, 'yaml-v1.tar.gz'), wasmFiles({ 'settings/data.yaml': 'enabled: yes\nlimit: 0x10\n', 'data.yml': 'owner: ops\n' }));
  const engine = await open(t, dir);
  t.same(engine.evaluate('yaml-v1', {}).value, { owner: 'ops', settings: { enabled: true, limit: 16 } }, 'YAML 1.1 as go-yaml reads it');
});

t.test('signed bundles: verified with the configured JWKs, refused with the reason otherwise', async (t) => {
  const rsa = await signer('rsa-1', 'RS256');
  const ec = await signer('ec-1', 'ES256');
  const ed = await signer('ed-1', 'EdDSA');
  const hs = hmacSigner('hs-1');
  const stranger = await signer('rsa-1', 'RS256');
  const dir = t.testdir();
  const files = wasmFiles({
    '.manifest': JSON.stringify({ revision: 'signed-7', roots: [''] }),
    'data.json': JSON.stringify({ limits: { max: 5 } }),
    'fixture/policy.rego': 'package fixture\n',
  });

  await signedBundle(dir, 'rsa-v1', files, rsa);
  await signedBundle(dir, 'ec-v1', files, ec);
  await signedBundle(dir, 'ed-v1', files, ed);
  await signedBundle(dir, 'hs-v1', files, hs);
  await signedBundle(dir, 'keyid-claim-v1', files, rsa, { keyidClaim: true });
  const signed = await signatures(files, rsa);
  await writeBundle(path.join(dir, 'tampered-v1.tar.gz'), { ...files, 'data.json': JSON.stringify({ limits: { max: 500 } }), '.signatures.json': signed });
  await writeBundle(path.join(dir, 'extra-file-v1.tar.gz'), { ...files, 'extra/data.json': '{"x":1}', '.signatures.json': signed });
  const listed = Object.entries(files).map(([name, content]) => ({ name, hash: sha256(content), algorithm: 'SHA-256' }));
  await signedBundle(dir, 'listed-missing-v1', files, rsa, { files: [...listed, { name: 'gone/data.json', hash: sha256('{}'), algorithm: 'SHA-256' }] });
  await signedBundle(dir, 'wrong-key-v1', files, stranger);
  await signedBundle(dir, 'unknown-key-v1', files, { ...ec, kid: 'nobody' });
  await signedBundle(dir, 'alg-confusion-v1', files, { ...hmacSigner('rsa-1'), key: Buffer.from(JSON.stringify(rsa.jwk)) });
  await signedBundle(dir, 'scoped-v1', files, rsa, { claims: { scope: 'write' } });
  await signedBundle(dir, 'md5-v1', files, rsa, { files: listed.map((f) => ({ ...f, algorithm: 'MD5', hash: createHash('md5').update(files[f.name]!).digest('hex') })) });
  await writeBundle(path.join(dir, 'unsigned-v1.tar.gz'), files);
  await writeBundle(path.join(dir, 'two-jwts-v1.tar.gz'), { ...files, '.signatures.json': JSON.stringify({ signatures: [JSON.parse(signed).signatures[0], JSON.parse(signed).signatures[0]] }) });

  const engine = await open(t, dir, keysOf(rsa, ec, ed, hs));
  t.same(engine.names(), ['ec-v1', 'ed-v1', 'hs-v1', 'keyid-claim-v1', 'rsa-v1'], 'RS256, ES256, EdDSA and HS256 signatures verify; so does the deprecated keyid claim');
  t.equal(engine.info('rsa-v1').revision, 'signed-7');
  t.same(engine.evaluate('ed-v1', {}).value, { limits: { max: 5 } });
  const reasons = refusals(engine, dir);
  t.match(reasons, {
    'tampered-v1': `signature check failed: /data.json: digest mismatch (signed ${sha256(files['data.json']!)}, found ${sha256(JSON.stringify({ limits: { max: 500 } }))})`,
    'extra-file-v1': 'signature check failed: /extra/data.json is not listed in the bundle signature',
    'listed-missing-v1': 'signature check failed: file(s) listed in the bundle signature but not in the bundle: /gone/data.json',
    'wrong-key-v1': /^signature check failed: the signature does not verify with key 'rsa-1' \(.+\)$/,
    'unknown-key-v1': "signature check failed: signed with key 'nobody', which is not among the bundle verification keys",
    'alg-confusion-v1': "signature check failed: key 'rsa-1' (RSA) cannot verify a HS256 signature",
    'scoped-v1': "signature check failed: the signature is scoped ('write'), and scoped bundle signatures are not accepted",
    'md5-v1': 'signature check failed: /.manifest: weak hashing algorithm MD5 refused (use SHA-256)',
    'unsigned-v1': 'signature check failed: the bundle is unsigned (no /.signatures.json), and bundle verification keys are configured',
    'two-jwts-v1': 'signature check failed: /.signatures.json: multiple JWTs not supported (expected exactly one)',
  });
  t.equal(Object.keys(reasons).length, 10, 'each refused bundle, and only those');

  const unconfigured = await open(t, dir);
  t.same(unconfigured.names(), ['unsigned-v1'], 'without keys configured only unsigned bundles load');
  t.equal(
    refusals(unconfigured, dir)['rsa-v1'],
    'signature check failed: the bundle is signed (/.signatures.json), and no bundle verification keys are configured to check it',
  );
});

t.test("JSON files are signed in OPA's canonical form, whatever their layout", async (t) => {
  const ed = await signer('ed-1', 'EdDSA');
  const dir = t.testdir();
  // Spaces, key order, a number's spelling and characters JSON may write several ways.
  const data = '{ "b": [1.0, 2e3, -0],\n  "a": {"é": "<&>", "z": null, "line": "x\u2028y", "yes": true} }';
  // Go's encoding (no HTML escaping, U+2028 escaped), keys in byte order, numbers as written:
  // what OPA hashes (its own test shows `{"revision": "quickbrownfaux"}` hashed as written here).
  const canonical = '{"a":{"line":"x\\u2028y","yes":true,"z":null,"é":"<&>"},"b":[1.0,2e3,-0]}';
  const manifest = '{\n  "revision": "quickbrownfaux"\n}\n';
  const wasm = opaAbiFixture();
  const files = { 'policy.wasm': wasm, 'data.json': data, '.manifest': manifest };
  const digests = [
    { name: 'policy.wasm', hash: sha256(wasm), algorithm: 'SHA-256' },
    { name: '/data.json', hash: sha256(canonical), algorithm: 'SHA-256' },
    { name: '.manifest', hash: sha256('{"revision":"quickbrownfaux"}'), algorithm: 'SHA-256' },
  ];
  await signedBundle(dir, 'canonical-v1', files, ed, { files: digests });
  await signedBundle(dir, 'as-written-v1', files, ed, { files: [digests[0]!, { ...digests[1]!, hash: sha256(data) }, digests[2]!] });
  const engine = await open(t, dir, keysOf(ed));
  t.same(engine.names(), ['canonical-v1'], 'the canonical digest verifies');
  t.match(refusals(engine, dir)['as-written-v1'], /^signature check failed: \/data\.json: digest mismatch/, 'the digest of the bytes as written does not');
  t.equal(engine.info('canonical-v1').revision, 'quickbrownfaux');
});

t.test('the verification keys file', async (t) => {
  const dir = t.testdir();
  const rsa = await signer('rsa-1', 'RS256');
  const write = async (name: string, doc: unknown): Promise<string> => {
    const file = path.join(dir, name);
    await writeFile(file, typeof doc === 'string' ? doc : JSON.stringify(doc));
    return file;
  };
  const keys = await readBundleVerificationKeys(await write('good.json', { 'rsa-1': rsa.jwk, 'hs-1': hmacSigner('hs-1').jwk }));
  t.same([...keys.keys()], ['rsa-1', 'hs-1']);
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  for (const [name, doc, reason] of [
    ['not-json.json', '{', /not-json\.json is not valid JSON/],
    ['empty.json', {}, /empty\.json: no keys/],
    ['shape.json', { k: { kty: 'XYZ' } }, /shape\.json: \/k\/kty: .+ \(expected \{"<key id>": <JWK>, …\}\)$/],
    ['private.json', { ec: await exportJWK(privateKey) }, /key 'ec': it holds private key material \(d\): give the public key only/],
    ['short.json', { hs: { kty: 'oct', k: 'c2VjcmV0' } }, /key 'hs': an HMAC secret must be at least 32 bytes/],
    ['mismatch.json', { rsa: { ...rsa.jwk, alg: 'ES256' } }, /key 'rsa': a RSA key cannot verify ES256/],
  ] as const) {
    await t.rejects(readBundleVerificationKeys(await write(name, doc)), { message: reason }, name);
  }
});

t.test('gatehouse serve: the option, the policies it loads, and what the API and /readyz report', async (t) => {
  const rsa = await signer('release', 'RS256');
  const root = t.testdir({ src: {} });
  const keysFile = path.join(root, 'keys.json');
  await writeFile(keysFile, JSON.stringify({ release: rsa.jwk }));
  t.match(settings(['--bundle-verification-keys', keysFile], {}), { bundleKeysFile: keysFile }, 'the keys file is an option');
  t.match(settings([], { GATEHOUSE_BUNDLE_VERIFICATION_KEYS: keysFile }), { bundleKeysFile: keysFile }, 'or from the environment');
  t.match(settings([], {}), { bundleKeysFile: undefined }, 'none unless given');

  const src = path.join(root, 'src');
  const files = wasmFiles({ '.manifest': JSON.stringify({ revision: 'v42', roots: [''] }), 'policy/released.rego': RELEASED_REGO });
  await signedBundle(src, 'released-v1', files, rsa);
  await writeBundle(path.join(src, 'unsigned-v1.tar.gz'), files);
  const engine = await openPolicies({ policiesDir: src, dataDir: path.join(root, 'data'), bundleKeysFile: keysFile, policyCacheDir: undefined, policyMaxIterations: undefined }, false);
  t.teardown(() => engine.close());
  t.same(engine.names(), ['released-v1']);

  const { url, admin } = await startTestServer(t, { policies: engine });
  const reader = await issueKey(url, admin, { env: 'sandbox', scopes: ['decisions:read'] });
  const list = await call(url, 'GET', '/v1/policies', { key: reader.key });
  t.match(list.json.data, [{ name: 'released-v1', origin: 'bundle', sources: ['released-v1.tar.gz'], revision: 'v42' }], 'GET /v1/policies shows the revision');
  const detail = await call(url, 'GET', '/v1/policies/released-v1', { key: reader.key });
  t.same(detail.json.modules, [{ path: 'policy/released.rego', text: RELEASED_REGO }], "a bundle's Rego is what it carries");
  const ready = await call(url, 'GET', '/readyz');
  t.equal(ready.json.status, 'degraded', 'a refused bundle degrades readiness');
  t.same(ready.json.notLoaded, [
    {
      file: path.join(root, 'data', 'policies', 'unsigned-v1.tar.gz'),
      reason: 'signature check failed: the bundle is unsigned (no /.signatures.json), and bundle verification keys are configured',
    },
  ]);
});
