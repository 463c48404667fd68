import { createPrivateKey, createPublicKey, createSecretKey, type KeyObject } from 'node:crypto';
import t from 'tap';
import { signBase, verifyBase } from '../core/signatures/algorithms.ts';
import { checkContentDigest, contentDigest } from '../core/signatures/content-digest.ts';
import type { SignatureFailure } from '../core/signatures/failure.ts';
import { buildSignatureBase } from '../core/signatures/signature-base.ts';
import { parseSignatureFields } from '../core/signatures/signature-fields.ts';
import { viewOf } from '../core/signatures/signer.ts';
import {
  ECC_P256_PUBLIC_KEY,
  ED25519_PRIVATE_KEY,
  ED25519_PUBLIC_KEY,
  REQUEST_CONTENT_DIGEST,
  RSA_PSS_PUBLIC_KEY,
  SHARED_SECRET,
  TEST_REQUEST,
  VECTORS,
} from './fixtures/rfc9421-vectors.ts';

// RFC 9421 Appendix B, reproduced with the project's own parser, base builder and verifier: the
// published signature bases come out byte for byte, and the published signatures verify with
// the published keys. Ed25519 and HMAC are deterministic, so signing reproduces them exactly.

const VERIFY_KEYS: Record<string, KeyObject> = {
  'rsa-pss-sha512': createPublicKey(RSA_PSS_PUBLIC_KEY),
  'ecdsa-p256-sha256': createPublicKey(ECC_P256_PUBLIC_KEY),
  'hmac-sha256': createSecretKey(Buffer.from(SHARED_SECRET, 'base64')),
  ed25519: createPublicKey(ED25519_PUBLIC_KEY),
};

/** The check a signature failure names, or `none` when nothing was thrown. */
function checkOf(fn: () => unknown): string {
  try {
    fn();
    return 'none';
  } catch (error) {
    return (error as SignatureFailure).check;
  }
}

const view = viewOf(new URL(TEST_REQUEST.url), TEST_REQUEST.method, TEST_REQUEST.headers);

t.test('the test request content digest (RFC 9530)', async (t) => {
  t.equal(contentDigest(Buffer.from(TEST_REQUEST.body), 'sha-512'), REQUEST_CONTENT_DIGEST);
  t.doesNotThrow(() => checkContentDigest(REQUEST_CONTENT_DIGEST, Buffer.from(TEST_REQUEST.body)));
  t.equal(checkOf(() => checkContentDigest(REQUEST_CONTENT_DIGEST, Buffer.from('{"hello": "World"}'))), 'digest');
  t.equal(checkOf(() => checkContentDigest('md5=:AAAA:', Buffer.from(TEST_REQUEST.body))), 'digest', 'no supported algorithm');
  t.equal(checkOf(() => checkContentDigest('sha-256', Buffer.from(TEST_REQUEST.body))), 'digest', 'not a byte sequence');
});

for (const vector of VECTORS) {
  t.test(`${vector.section} ${vector.label} (${vector.alg})`, async (t) => {
    const signature = `${vector.label}=:${vector.signature}:`;
    const [entry] = parseSignatureFields(vector.signatureInput, signature);
    t.equal(entry!.label, vector.label);
    t.equal(entry!.created, 1618884473);
    if (vector.request) {
      const built = buildSignatureBase(entry!.input, view);
      t.equal(built.base, vector.signatureBase, 'the signature base is the published one');
    }
    const key = VERIFY_KEYS[vector.alg]!;
    t.ok(verifyBase(vector.alg, key, Buffer.from(vector.signatureBase), entry!.signature), 'the published signature verifies');
    const tampered = Buffer.from(vector.signatureBase.replace('created=1618884473', 'created=1618884474'));
    t.notOk(verifyBase(vector.alg, key, tampered, entry!.signature), 'and not over a changed base');
  });
}

t.test('deterministic algorithms reproduce the published signatures', async (t) => {
  const ed = VECTORS.find((v) => v.alg === 'ed25519')!;
  t.equal(signBase('ed25519', createPrivateKey(ED25519_PRIVATE_KEY), Buffer.from(ed.signatureBase)).toString('base64'), ed.signature);
  const hmac = VECTORS.find((v) => v.alg === 'hmac-sha256')!;
  t.equal(signBase('hmac-sha256', VERIFY_KEYS['hmac-sha256']!, Buffer.from(hmac.signatureBase)).toString('base64'), hmac.signature);
});

t.test('derived components and field parameters', async (t) => {
  const req = viewOf(new URL('http://www.example.com/path?param=value&foo=bar&baz=batman&qux=&var=this%20is%20a%20big%0Avalue&bar=with+plus+whitespace'), 'GET', {
    'example-dict': ' a=1,    b=2;x=1;y=2,   c=(a   b   c)',
    'content-digest': 'sha-256=:AAAA:,  sha-512=:BBBB:',
  });
  const base = (input: string) => buildSignatureBase(parseSignatureFields(`s=${input}`, 's=:AAAA:')[0]!.input, req);
  t.equal(
    base('("@method" "@scheme" "@authority" "@path" "@request-target" "@target-uri");created=1').base.split('\n').slice(0, 6).join('\n'),
    [
      '"@method": GET',
      '"@scheme": http',
      '"@authority": www.example.com',
      '"@path": /path',
      '"@request-target": /path?param=value&foo=bar&baz=batman&qux=&var=this%20is%20a%20big%0Avalue&bar=with+plus+whitespace',
      '"@target-uri": http://www.example.com/path?param=value&foo=bar&baz=batman&qux=&var=this%20is%20a%20big%0Avalue&bar=with+plus+whitespace',
    ].join('\n'),
  );
  // RFC 9421 §2.2.8's examples.
  t.equal(
    base('("@query-param";name="baz" "@query-param";name="qux" "@query-param";name="var" "@query-param";name="bar")').base.split('\n').slice(0, 4).join('\n'),
    [
      '"@query-param";name="baz": batman',
      '"@query-param";name="qux": ',
      '"@query-param";name="var": this%20is%20a%20big%0Avalue',
      '"@query-param";name="bar": with%20plus%20whitespace',
    ].join('\n'),
  );
  t.equal(base('("content-digest";key="sha-512")').base.split('\n')[0], '"content-digest";key="sha-512": :BBBB:', 'a dictionary member');
  t.equal(base('("content-digest";sf)').base.split('\n')[0], '"content-digest";sf: sha-256=:AAAA:, sha-512=:BBBB:', 're-serialised');
  t.equal(base('("content-digest";bs)').base.split('\n')[0], `"content-digest";bs: :${Buffer.from('sha-256=:AAAA:,  sha-512=:BBBB:').toString('base64')}:`);
  t.same(base('("@method" "content-digest";key="sha-256")').covered, ['@method', 'content-digest;key="sha-256"']);
  t.equal(buildSignatureBase(parseSignatureFields('s=("@query")', 's=:AA==:')[0]!.input, viewOf(new URL('http://a.example/'), 'GET', {})).base.split('\n')[0], '"@query": ?');
  t.equal(checkOf(() => base('("x-missing")')), 'missing_component');
  t.equal(checkOf(() => base('("@query-param";name="nope")')), 'missing_component');
  t.equal(checkOf(() => base('("@status")')), 'malformed', '@status is for responses');
  t.equal(checkOf(() => base('("@method" "@method")')), 'malformed', 'no component twice');
  t.equal(checkOf(() => base('("example-dict";sf)')), 'malformed', 'sf on a field of unknown type');
  t.equal(checkOf(() => base('("content-digest";req)')), 'malformed');
  t.equal(checkOf(() => parseSignatureFields('s=("@method")', undefined)), 'malformed');
  t.equal(checkOf(() => parseSignatureFields('s=("@method"', 's=:AA==:')), 'malformed');
  t.equal(checkOf(() => parseSignatureFields('s=("@method");created="x"', 's=:AA==:')), 'malformed');
  t.equal(checkOf(() => parseSignatureFields('s=("@method")', 't=:AA==:')), 'malformed', 'a label without its signature');
  t.equal(checkOf(() => parseSignatureFields(`s=("@method");keyid="${'k'.repeat(300)}"`, 's=:AA==:')), 'malformed', 'an oversized keyid');
});
