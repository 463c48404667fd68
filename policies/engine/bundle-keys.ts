/**
 * The keys signed OPA bundles are verified with (`gatehouse serve --bundle-verification-keys
 * FILE`): a JSON file mapping key ids to JWKs, the id being what a bundle's signature names in
 * its `kid` header. Public RSA, EC (P-256/384/521) and Ed25519 keys, or the shared secret of an
 * HMAC (`oct`) key. A JWK's own `alg`, when given, is the only algorithm the key verifies.
 */
import { readFile } from 'node:fs/promises';
import { importJWK, type CryptoKey, type JWK } from 'jose';
import { parseShaped, VerificationKeysDoc } from './bundle-schemas.ts';

/** Key id → JWK. */
export type BundleVerificationKeys = ReadonlyMap<string, JWK>;

/** The JWS algorithms each key type verifies; an EC key's is fixed by its curve. */
const ALGORITHMS_OF: Readonly<Record<string, readonly string[]>> = {
  RSA: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'],
  OKP: ['EdDSA', 'Ed25519'],
  oct: ['HS256', 'HS384', 'HS512'],
};

const EC_ALGORITHM: Readonly<Record<string, string>> = { 'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512' };
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth'];

/** The algorithms `jwk` may verify. */
function algorithmsOf(jwk: JWK): readonly string[] {
  if (jwk.kty !== 'EC') return ALGORITHMS_OF[jwk.kty!]!;
  const alg = EC_ALGORITHM[jwk.crv ?? ''];
  return alg ? [alg] : [];
}

/** Why `jwk` may not verify bundles, or undefined when it may. */
async function keyProblem(jwk: JWK): Promise<string | undefined> {
  const algorithms = algorithmsOf(jwk);
  if (algorithms.length === 0) return `unsupported curve ${String(jwk.crv)}`;
  if (jwk.alg !== undefined && !algorithms.includes(jwk.alg)) return `a ${jwk.kty} key cannot verify ${jwk.alg}`;
  const secret = jwk.kty === 'oct' ? [] : PRIVATE_MEMBERS.filter((member) => member in jwk);
  if (secret.length > 0) return `it holds private key material (${secret.join(', ')}): give the public key only`;
  try {
    await importJWK(jwk, jwk.alg ?? algorithms[0]);
  } catch (err) {
    return `not a valid ${jwk.kty} JWK (${(err as Error).message})`;
  }
  if (jwk.kty === 'RSA' && Buffer.from(jwk.n ?? '', 'base64url').length < 256) return 'RSA keys must be at least 2048 bits';
  if (jwk.kty === 'oct' && Buffer.from(jwk.k ?? '', 'base64url').length < 32) return 'an HMAC secret must be at least 32 bytes';
  return undefined;
}

/** Reads and checks the keys file; throws naming the file and the key at fault. */
export async function readBundleVerificationKeys(file: string): Promise<BundleVerificationKeys> {
  const where = `bundle verification keys ${file}`;
  const text = await readFile(file, 'utf8').catch((err: Error) => {
    throw new Error(`${where}: ${err.message}`);
  });
  const doc = parseShaped(text, VerificationKeysDoc, where, (reason) => new Error(`${reason} (expected {"<key id>": <JWK>, …})`));
  const keys = new Map<string, JWK>(Object.entries(doc));
  if (keys.size === 0) throw new Error(`bundle verification keys ${file}: no keys`);
  for (const [kid, jwk] of keys) {
    const problem = await keyProblem(jwk);
    if (problem) throw new Error(`bundle verification keys ${file}: key '${kid}': ${problem}`);
  }
  return keys;
}

/**
 * The key `kid` of `keys` ready to verify an `alg` signature. Throws a reason when there is no
 * such key or it does not verify that algorithm (so no key is ever used as another kind).
 */
export async function verificationKey(keys: BundleVerificationKeys, kid: string, alg: string): Promise<CryptoKey | Uint8Array> {
  const jwk = keys.get(kid);
  if (!jwk) throw new Error(`signed with key '${kid}', which is not among the bundle verification keys`);
  if (jwk.alg !== undefined && jwk.alg !== alg) throw new Error(`key '${kid}' verifies ${jwk.alg} only, the signature is ${alg}`);
  if (!algorithmsOf(jwk).includes(alg)) throw new Error(`key '${kid}' (${jwk.crv ?? jwk.kty}) cannot verify a ${alg} signature`);
  try {
    return await importJWK(jwk, alg);
  } catch (err) {
    throw new Error(`key '${kid}' cannot verify a ${alg} signature (${(err as Error).message})`);
  }
}
