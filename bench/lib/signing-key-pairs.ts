/**
 * Fresh RFC 9421 signing keys of every algorithm Gatehouse accepts, for the benchmark and the
 * tests: the private half signs with the project's signer (core/signatures/signer.ts), the public
 * JWK is what a client registers, and the verification key is what the server ends up holding.
 *
 * The product never generates keys (clients bring their own), so this lives with the bench, which
 * the tests already build on, rather than in core.
 */
import { createSecretKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import type { SignatureAlgorithm } from '../../core/signatures/algorithms.ts';
import type { SigningKey } from '../../core/signatures/signer.ts';

export interface SigningKeyPair {
  signer: SigningKey;
  /** The JWK to register for `signer`, `kid` included: public members only, or `{kty:"oct", k}` for hmac-sha256. */
  jwk: Record<string, unknown>;
  /** The key a verifier checks `signer`'s signatures with: the public key, or the shared secret for hmac-sha256. */
  verificationKey: KeyObject;
}

export function generateSigningKeyPair(alg: SignatureAlgorithm, kid: string): SigningKeyPair {
  if (alg === 'hmac-sha256') {
    const secret = randomBytes(32);
    const key = createSecretKey(secret);
    return { signer: { kid, alg, key }, jwk: { kty: 'oct', k: secret.toString('base64url'), kid }, verificationKey: key };
  }
  const pair =
    alg === 'ed25519'
      ? generateKeyPairSync('ed25519')
      : alg === 'ecdsa-p256-sha256'
        ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
        : generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { signer: { kid, alg, key: pair.privateKey as KeyObject }, jwk: { ...pair.publicKey.export({ format: 'jwk' }), kid }, verificationKey: pair.publicKey as KeyObject };
}
