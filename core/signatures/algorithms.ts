import { constants, createHmac, sign, timingSafeEqual, verify, type KeyObject } from 'node:crypto';

/**
 * The RFC 9421 algorithms Gatehouse accepts, and the one place that signs or verifies with each.
 * Keys are node:crypto KeyObjects (built from JWKs by core/signing-keys.ts): verification is
 * synchronous and needs no WebCrypto round trip.
 */
export const SIGNATURE_ALGORITHMS = ['ed25519', 'ecdsa-p256-sha256', 'rsa-pss-sha512', 'hmac-sha256'] as const;
export type SignatureAlgorithm = (typeof SIGNATURE_ALGORITHMS)[number];

/** The JOSE `alg` naming the same algorithm, for `jose.importJWK` and a JWK's own `alg` member. */
export const JOSE_ALGORITHM: Record<SignatureAlgorithm, string> = {
  ed25519: 'EdDSA',
  'ecdsa-p256-sha256': 'ES256',
  'rsa-pss-sha512': 'PS512',
  'hmac-sha256': 'HS256',
};

// RFC 9421 §3.3.4: rsa-pss-sha512 uses a salt as long as the SHA-512 digest (64 bytes).
const PSS = { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 64 };

/** Signs `data` (the signature base). ECDSA signatures are raw r||s (RFC 9421 §3.3.6). */
export function signBase(alg: SignatureAlgorithm, key: KeyObject, data: Buffer): Buffer {
  switch (alg) {
    case 'ed25519':
      return sign(null, data, key);
    case 'ecdsa-p256-sha256':
      return sign('sha256', data, { key, dsaEncoding: 'ieee-p1363' });
    case 'rsa-pss-sha512':
      return sign('sha512', data, { key, ...PSS });
    case 'hmac-sha256':
      return createHmac('sha256', key).update(data).digest();
  }
}

/** Checks a signature over `data`; HMAC is compared in constant time. */
export function verifyBase(alg: SignatureAlgorithm, key: KeyObject, data: Buffer, signature: Buffer): boolean {
  switch (alg) {
    case 'ed25519':
      return verify(null, data, key, signature);
    case 'ecdsa-p256-sha256':
      // A P-256 r||s signature is exactly 64 bytes; anything else is not one.
      return signature.length === 64 && verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature);
    case 'rsa-pss-sha512':
      // Verifiers accept any salt length so signers using the library default still verify.
      return verify('sha512', data, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_AUTO }, signature);
    case 'hmac-sha256': {
      const expected = createHmac('sha256', key).update(data).digest();
      return signature.length === expected.length && timingSafeEqual(signature, expected);
    }
  }
}
