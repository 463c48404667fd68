/**
 * OPA's `io.jwt.verify_rs256`, `_es256` and `_eddsa`: public-key signatures, which the policy
 * runtime leaves to the host's node:crypto. Operands OPA refuses (a token that is not three
 * base64url segments with a JSON header, a key that does not parse) make the call undefined; a
 * well-formed token whose signature does not match is `false`.
 */
import { createPublicKey, verify, X509Certificate, type KeyObject } from 'node:crypto';

/** Base64url with or without padding, as OPA's `base64url.decode` takes it; undefined if invalid. */
function base64UrlBytes(s: string): Buffer | undefined {
  const unpadded = s.endsWith('=') ? s.replace(/={1,2}$/, '') : s;
  if (!/^[A-Za-z0-9_-]*$/.test(unpadded) || unpadded.length % 4 === 1) return undefined;
  if (s.endsWith('=') && s.length % 4 !== 0) return undefined;
  return Buffer.from(unpadded, 'base64url');
}

function jsonObject(bytes: Buffer): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(bytes.toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

interface Jws {
  header: Record<string, unknown>;
  payload: Buffer;
  signature: Buffer;
  /** `<header>.<payload>` as written: what the signature covers. */
  signed: string;
}

/** A compact JWS: three base64url segments, the first a JSON object. */
function parseJws(token: string): Jws | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [h, p, s] = parts.map(base64UrlBytes);
  if (!h || !p || !s) return undefined;
  const header = jsonObject(h);
  return header && { header, payload: p, signature: s, signed: `${parts[0]}.${parts[1]}` };
}

/**
 * The public keys a certificate operand holds: a PEM certificate or public key, a JWK, or a JWK
 * set (any of whose keys may verify); undefined if none parses.
 */
function publicKeys(certificate: string): KeyObject[] | undefined {
  try {
    if (certificate.includes('-----BEGIN CERTIFICATE-----')) return [new X509Certificate(certificate).publicKey];
    if (certificate.includes('-----BEGIN')) return [createPublicKey(certificate)];
    const jwk = JSON.parse(certificate) as { keys?: unknown };
    const jwks = Array.isArray(jwk.keys) ? jwk.keys : [jwk];
    return jwks.map((key) => createPublicKey({ key: key as never, format: 'jwk' }));
  } catch {
    return undefined;
  }
}

export type SignatureAlgorithm = 'RS256' | 'ES256' | 'EdDSA';

/** How node:crypto verifies each algorithm: its digest, and ECDSA signatures as JWS writes them (r ‖ s). */
const VERIFY_PARAMS: Record<SignatureAlgorithm, { digest: string | null; ecdsa: boolean }> = {
  RS256: { digest: 'sha256', ecdsa: false },
  ES256: { digest: 'sha256', ecdsa: true },
  EdDSA: { digest: null, ecdsa: false },
};

/** `io.jwt.verify_rs256|es256|eddsa(token, certificate)`. */
export function jwtVerifyPublicKey(algorithm: SignatureAlgorithm, token: string, certificate: string): boolean | undefined {
  const jws = parseJws(token);
  const keys = publicKeys(certificate);
  if (!jws || !keys) return undefined;
  const { digest, ecdsa } = VERIFY_PARAMS[algorithm];
  const data = Buffer.from(jws.signed, 'utf8');
  return keys.some((key) => {
    try {
      return verify(digest, data, ecdsa ? { key, dsaEncoding: 'ieee-p1363' } : key, jws.signature);
    } catch {
      return false;
    }
  });
}
