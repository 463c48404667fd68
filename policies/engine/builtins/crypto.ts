/**
 * OPA's public-key JWT builtins, which the policy runtime leaves to the host's node:crypto:
 * `io.jwt.verify_rs*|ps*|es*|eddsa` and `io.jwt.decode_verify`. Operands OPA refuses (a token
 * that is not three base64url segments with a JSON header, a key that does not parse) make the
 * call undefined; a well-formed token whose signature does not match is `false`.
 */
import { constants, createPublicKey, verify, X509Certificate, type KeyObject } from 'node:crypto';

/** Base64url with or without padding, as OPA's `base64url.decode` takes it; undefined if invalid. */
function base64UrlBytes(s: string): Buffer | undefined {
  const unpadded = s.endsWith('=') ? s.replace(/={1,2}$/, '') : s;
  if (!/^[A-Za-z0-9_-]*$/.test(unpadded) || unpadded.length % 4 === 1) return undefined;
  if (s.endsWith('=') && s.length % 4 !== 0) return undefined;
  return Buffer.from(unpadded, 'base64url');
}

type JsonObject = Record<string, unknown>;

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function jsonObject(bytes: Buffer): JsonObject | undefined {
  try {
    const v: unknown = JSON.parse(bytes.toString('utf8'));
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** The JOSE header parameters OPA reads; any other name is `unknown`, which `crit` may name. */
interface TokenHeader {
  alg: string;
  kid: string;
  cty: string;
  crit: Set<string>;
  unknown: string[];
}

const STRING_PARAMETERS = ['alg', 'kid', 'typ', 'cty'];

/**
 * A header's parameters as OPA parses them: `alg`, `kid`, `typ` and `cty` must be strings and
 * `crit` a list naming at least one string (its strings up to the first that is not one count);
 * undefined otherwise.
 */
function tokenHeader(header: JsonObject): TokenHeader | undefined {
  const parsed: TokenHeader = { alg: '', kid: '', cty: '', crit: new Set(), unknown: [] };
  for (const [name, value] of Object.entries(header)) {
    if (STRING_PARAMETERS.includes(name)) {
      if (typeof value !== 'string') return undefined;
      if (name !== 'typ') parsed[name as 'alg' | 'kid' | 'cty'] = value;
    } else if (name === 'crit') {
      if (!Array.isArray(value)) return undefined;
      const firstNonString = value.findIndex((v) => typeof v !== 'string');
      parsed.crit = new Set(value.slice(0, firstNonString < 0 ? value.length : firstNonString) as string[]);
      if (parsed.crit.size === 0) return undefined;
    } else {
      parsed.unknown.push(name);
    }
  }
  return parsed;
}

interface Jws {
  /** The header as decoded, which `decode_verify` returns. */
  decodedHeader: JsonObject;
  header: TokenHeader;
  /** The second segment as written. */
  payloadSegment: string;
  signature: Buffer;
  /** `<header>.<payload>` as written: what the signature covers. */
  signed: string;
}

/**
 * A compact JWS as OPA's verifiers read it: three segments, the first a base64url JSON object
 * with well-typed parameters and no `enc` (a JWE), the third base64url. The payload is left
 * undecoded, as the verifiers only sign over it.
 */
function parseJws(token: string): Jws | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [h, p, s] = parts as [string, string, string];
  const headerBytes = base64UrlBytes(h);
  const signature = base64UrlBytes(s);
  const decodedHeader = headerBytes && jsonObject(headerBytes);
  if (!decodedHeader || !signature || 'enc' in decodedHeader) return undefined;
  const header = tokenHeader(decodedHeader);
  return header && { decodedHeader, header, payloadSegment: p, signature, signed: `${h}.${p}` };
}

/** The algorithms verified with a public key, each OPA's `io.jwt.verify_<alg in lower case>`. */
export const PUBLIC_KEY_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
export type SignatureAlgorithm = (typeof PUBLIC_KEY_ALGORITHMS)[number];

/** The algorithms OPA knows; a JWK naming another is ignored. */
const ALGORITHMS: readonly string[] = [...PUBLIC_KEY_ALGORITHMS, 'HS256', 'HS384', 'HS512'];
const isAlgorithm = (alg: string): boolean => ALGORITHMS.includes(alg);

/** A public key, with the `alg` and `kid` a JWK gives it ('' when it gives none). */
interface VerificationKey {
  key: KeyObject;
  alg: string;
  kid: string;
}

const jwkString = (jwk: JsonObject, name: string): string => (typeof jwk[name] === 'string' ? (jwk[name] as string) : '');

/**
 * The public keys a certificate operand holds: a PEM certificate or public key, a JWK, or a JWK
 * set; undefined if any does not parse. JWKs naming an algorithm OPA does not know are left out,
 * as OPA does.
 */
function verificationKeys(certificate: string): VerificationKey[] | undefined {
  try {
    if (certificate.includes('-----BEGIN CERTIFICATE-----')) return [{ key: new X509Certificate(certificate).publicKey, alg: '', kid: '' }];
    if (certificate.includes('-----BEGIN')) return [{ key: createPublicKey(certificate), alg: '', kid: '' }];
    const jwk = JSON.parse(certificate) as { keys?: unknown };
    const jwks = (Array.isArray(jwk.keys) ? jwk.keys : [jwk]) as JsonObject[];
    return jwks
      .map((key) => ({ key: createPublicKey({ key: key as never, format: 'jwk' }), alg: jwkString(key, 'alg'), kid: jwkString(key, 'kid') }))
      .filter(({ alg }) => alg === '' || isAlgorithm(alg));
  } catch {
    return undefined;
  }
}

/**
 * The keys OPA tries for a token: only the key whose `kid` the header names if there is one,
 * else every key whose `alg`, if it has one, is the header's.
 */
function candidateKeys(keys: VerificationKey[], header: TokenHeader): KeyObject[] {
  const named = header.kid === '' ? undefined : keys.find(({ kid }) => kid === header.kid);
  if (named) return [named.key];
  return keys.filter(({ alg }) => alg === '' || alg === header.alg).map(({ key }) => key);
}

/** How each algorithm verifies: its digest, the key type it needs, and the signature scheme. */
const VERIFY_PARAMS: Record<SignatureAlgorithm, { digest: string | null; keyType: string; scheme: 'pkcs1' | 'pss' | 'ecdsa' | 'eddsa' }> = {
  RS256: { digest: 'sha256', keyType: 'rsa', scheme: 'pkcs1' },
  RS384: { digest: 'sha384', keyType: 'rsa', scheme: 'pkcs1' },
  RS512: { digest: 'sha512', keyType: 'rsa', scheme: 'pkcs1' },
  PS256: { digest: 'sha256', keyType: 'rsa', scheme: 'pss' },
  PS384: { digest: 'sha384', keyType: 'rsa', scheme: 'pss' },
  PS512: { digest: 'sha512', keyType: 'rsa', scheme: 'pss' },
  ES256: { digest: 'sha256', keyType: 'ec', scheme: 'ecdsa' },
  ES384: { digest: 'sha384', keyType: 'ec', scheme: 'ecdsa' },
  ES512: { digest: 'sha512', keyType: 'ec', scheme: 'ecdsa' },
  EdDSA: { digest: null, keyType: 'ed25519', scheme: 'eddsa' },
};

/**
 * Whether `signature` signs `data` under `key` in `algorithm`. A key of another type never
 * verifies, as Go's verifiers refuse it. PSS takes any salt length, as Go's `rsa.VerifyPSS` with
 * no options; ECDSA signatures are r ‖ s, as JWS writes them.
 */
function verifiesWith(algorithm: SignatureAlgorithm, key: KeyObject, data: Buffer, signature: Buffer): boolean {
  const { digest, keyType, scheme } = VERIFY_PARAMS[algorithm];
  if (key.asymmetricKeyType !== keyType) return false;
  const options =
    scheme === 'pss' ? { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_AUTO }
    : scheme === 'ecdsa' ? { key, dsaEncoding: 'ieee-p1363' as const }
    : key;
  try {
    return verify(digest, data, options, signature);
  } catch {
    return false;
  }
}

/** Whether any of `keys` verifies the token's signature in `algorithm`. */
function verifiesWithAny(algorithm: SignatureAlgorithm, keys: KeyObject[], jws: Jws): boolean {
  const data = Buffer.from(jws.signed, 'utf8');
  return keys.some((key) => verifiesWith(algorithm, key, data, jws.signature));
}

/** `io.jwt.verify_<alg>(token, certificate)` for a public-key algorithm. */
export function jwtVerifyPublicKey(algorithm: SignatureAlgorithm, token: string, certificate: string): boolean | undefined {
  const keys = verificationKeys(certificate);
  const jws = parseJws(token);
  return keys && jws && verifiesWithAny(algorithm, candidateKeys(keys, jws.header), jws);
}
