/**
 * Signed OPA bundles, verified as OPA verifies them (bundle/verify.go, bundle/bundle.go):
 * `/.signatures.json` holds `{"signatures": [<one JWT>]}`; the JWT names its key in the `kid`
 * header (or the deprecated `keyid` claim) and its payload lists `files: [{name, hash,
 * algorithm}]`. The bundle loads only when the JWT verifies with that configured key, every file
 * of the bundle (`/.signatures.json` aside) is listed with its digest (bundle-file-digest.ts),
 * and every listed file is in the bundle.
 *
 * Where OPA's configuration would decide, the stricter choice is made: with verification keys
 * configured an unsigned bundle is refused (OPA: a `signing` block), a signed bundle without them
 * is refused (OPA: "verification key not provided"), a signature carrying a `scope` is refused
 * (OPA compares it with a configured scope, and none can be configured here), and so are MD5 and
 * SHA-1 digests.
 */
import { compactVerify, decodeJwt, decodeProtectedHeader } from 'jose';
import { bundleFileDigest, refusedAlgorithm } from './bundle-file-digest.ts';
import { verificationKey, type BundleVerificationKeys } from './bundle-keys.ts';
import { parseShaped, SignaturePayload, SignaturesDoc } from './bundle-schemas.ts';
import { BundleSignatureError } from './errors.ts';

export const SIGNATURES_MEMBER = '.signatures.json';

/** The one JWT of `/.signatures.json`. */
function signatureToken(content: Buffer): string {
  const { signatures = [], plugin } = parseShaped(content.toString('utf8'), SignaturesDoc, `/${SIGNATURES_MEMBER}`, (m) => new BundleSignatureError(m));
  if (plugin) throw new BundleSignatureError(`/${SIGNATURES_MEMBER} names the verifier plugin '${plugin}'; only OPA's default verification is supported`);
  if (signatures.length === 0) throw new BundleSignatureError(`/${SIGNATURES_MEMBER}: missing JWT (expected exactly one)`);
  if (signatures.length > 1) throw new BundleSignatureError(`/${SIGNATURES_MEMBER}: multiple JWTs not supported (expected exactly one)`);
  return signatures[0]!;
}

/** Verifies the JWT with the key it names; returns its payload. */
async function verifiedPayload(token: string, keys: BundleVerificationKeys): Promise<SignaturePayload> {
  let kid: unknown;
  let alg: string;
  try {
    const header = decodeProtectedHeader(token);
    alg = String(header.alg);
    kid = header.kid ?? decodeJwt(token).keyid;
  } catch (err) {
    throw new BundleSignatureError(`/${SIGNATURES_MEMBER}: not a JWT (${(err as Error).message})`);
  }
  if (typeof kid !== 'string' || kid === '') throw new BundleSignatureError(`the JWT names no key (no 'kid' header or 'keyid' claim)`);
  const key = await verificationKey(keys, kid, alg).catch((err: Error) => {
    throw new BundleSignatureError(err.message);
  });
  const { payload } = await compactVerify(token, key, { algorithms: [alg] }).catch((err: Error) => {
    throw new BundleSignatureError(`the signature does not verify with key '${kid}' (${err.message})`);
  });
  const claims = parseShaped(new TextDecoder().decode(payload), SignaturePayload, 'the JWT payload', (m) => new BundleSignatureError(m));
  if (claims.scope) throw new BundleSignatureError(`the signature is scoped ('${claims.scope}'), and scoped bundle signatures are not accepted`);
  return claims;
}

/** Why the member at `path` does not match what the signature lists for it; undefined when it matches. */
function fileMismatch(path: string, content: Buffer, listed: SignaturePayload['files'][number] | undefined): string | undefined {
  if (!listed) return `/${path} is not listed in the bundle signature`;
  const refused = refusedAlgorithm(listed.algorithm);
  if (refused) return `/${path}: ${refused}`;
  if (!/^(?:[0-9a-f]{2})+$/i.test(listed.hash)) return `/${path}: the signed hash is not hexadecimal`;
  const digest = bundleFileDigest(path, content, listed.algorithm!);
  return digest === listed.hash.toLowerCase() ? undefined : `/${path}: digest mismatch (signed ${listed.hash}, found ${digest})`;
}

/**
 * Checks the signature of a bundle whose members (path without a leading `/` → content) are
 * given, against `keys` (undefined: none configured). Throws BundleSignatureError.
 */
export async function verifyBundleSignature(members: ReadonlyMap<string, Buffer>, keys: BundleVerificationKeys | undefined): Promise<void> {
  const signatures = members.get(SIGNATURES_MEMBER);
  if (!keys) {
    if (signatures) throw new BundleSignatureError(`the bundle is signed (/${SIGNATURES_MEMBER}), and no bundle verification keys are configured to check it`);
    return;
  }
  if (!signatures) throw new BundleSignatureError(`the bundle is unsigned (no /${SIGNATURES_MEMBER}), and bundle verification keys are configured`);
  const payload = await verifiedPayload(signatureToken(signatures), keys);
  const listed = new Map(payload.files.map((file) => [file.name.replace(/^\/+/, ''), file]));
  for (const [path, content] of [...members].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (path === SIGNATURES_MEMBER) continue;
    let mismatch: string | undefined;
    try {
      mismatch = fileMismatch(path, content, listed.get(path));
    } catch (err) {
      mismatch = (err as Error).message;
    }
    if (mismatch) throw new BundleSignatureError(mismatch);
    listed.delete(path);
  }
  if (listed.size > 0) {
    throw new BundleSignatureError(`file(s) listed in the bundle signature but not in the bundle: ${[...listed.keys()].map((p) => `/${p}`).join(', ')}`);
  }
}
