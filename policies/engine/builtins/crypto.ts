/**
 * OPA's public-key JWT builtins, which the policy runtime leaves to the host's node:crypto:
 * `io.jwt.verify_rs*|ps*|es*|eddsa`, `io.jwt.decode_verify` and `io.jwt.encode_sign(_raw)`.
 * Operands OPA refuses (a token that is not three base64url segments with a JSON header, a key
 * that does not parse) make the call undefined; a well-formed token whose signature does not
 * match is `false`.
 */
import { constants, createHmac, createPrivateKey, createPublicKey, sign, timingSafeEqual, verify, X509Certificate, type KeyObject } from 'node:crypto';

/** Base64url with or without padding, as OPA's `base64url.decode` takes it; undefined if invalid. */
function base64UrlBytes(s: string): Buffer | undefined {
  const unpadded = s.endsWith('=') ? s.replace(/={1,2}$/, '') : s;
  if (!/^[A-Za-z0-9_-]*$/.test(unpadded) || unpadded.length % 4 === 1) return undefined;
  if (s.endsWith('=') && s.length % 4 !== 0) return undefined;
  return Buffer.from(unpadded, 'base64url');
}

type JsonObject = Record<string, unknown>;

/** Whether a JSON value is an object (not an array or null). */
export const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function jsonObject(text: string): JsonObject | undefined {
  try {
    const v: unknown = JSON.parse(text);
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
  /** The header's JSON text as decoded, which `decode_verify` returns. */
  headerText: string;
  header: TokenHeader;
  /** The second segment as written. */
  payloadSegment: string;
  /** Undefined when not base64url: `decode_verify` answers an invalid header before it looks. */
  signature: Buffer | undefined;
  /** `<header>.<payload>` as written: what the signature covers. */
  signed: string;
}

/**
 * A compact JWS as OPA's verifiers read it: three segments, the first a base64url JSON object
 * with well-typed parameters and no `enc` (a JWE). The payload is left undecoded, as the
 * verifiers only sign over it.
 */
function parseJws(token: string): Jws | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [h, p, s] = parts as [string, string, string];
  const headerText = base64UrlBytes(h)?.toString('utf8');
  if (headerText === undefined) return undefined;
  const decodedHeader = jsonObject(headerText);
  if (!decodedHeader || 'enc' in decodedHeader) return undefined;
  const header = tokenHeader(decodedHeader);
  return header && { headerText, header, payloadSegment: p, signature: base64UrlBytes(s), signed: `${h}.${p}` };
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
  /** Whether the JWK is a private key (has `d`), whose public half node:crypto takes. */
  private: boolean;
}

const jwkString = (jwk: JsonObject, name: string): string => (typeof jwk[name] === 'string' ? (jwk[name] as string) : '');

/**
 * The first PEM block of a text, as Go's `pem.Decode` finds it, with what follows its end line,
 * which OPA requires to be nothing.
 */
function firstPemBlock(text: string): { type: string; block: string; rest: string } | undefined {
  const match = /-----BEGIN ([^\r\n]*?)-----\r?\n[\s\S]*?-----END \1-----[ \t]*(?:\r?\n|$)/.exec(text);
  return match ? { type: match[1] as string, block: match[0], rest: text.slice(match.index + match[0].length) } : undefined;
}

/**
 * The key of a PEM operand as OPA's getKeysFromCertOrJWK reads it: one block and nothing after
 * it, a `CERTIFICATE` or an X.509 `PUBLIC KEY`; any other block (a PKCS #1 `RSA PUBLIC KEY`, a
 * private key) is undefined.
 */
function pemKey({ type, block, rest }: { type: string; block: string; rest: string }): KeyObject | undefined {
  if (rest !== '') return undefined;
  if (type === 'CERTIFICATE') return new X509Certificate(block).publicKey;
  return type === 'PUBLIC KEY' ? createPublicKey({ key: block, format: 'pem', type: 'spki' }) : undefined;
}

/**
 * The public keys a certificate operand holds: a PEM certificate or public key, a JWK, or a JWK
 * set; undefined if any does not parse. JWKs naming an algorithm OPA does not know are left out,
 * as OPA does.
 */
function verificationKeys(certificate: string): VerificationKey[] | undefined {
  try {
    const pem = firstPemBlock(certificate);
    if (pem) {
      const key = pemKey(pem);
      return key && [{ key, alg: '', kid: '', private: false }];
    }
    const jwk = JSON.parse(certificate) as { keys?: unknown };
    const jwks = (Array.isArray(jwk.keys) ? jwk.keys : [jwk]) as JsonObject[];
    return jwks
      .map((key) => ({
        key: createPublicKey({ key: key as never, format: 'jwk' }),
        alg: jwkString(key, 'alg'),
        kid: jwkString(key, 'kid'),
        private: 'd' in key,
      }))
      .filter(({ alg }) => alg === '' || isAlgorithm(alg));
  } catch {
    return undefined;
  }
}

/**
 * The keys OPA tries for a token: only the key whose `kid` the header names if there is one,
 * else every key whose `alg`, if it has one, is the header's.
 */
function candidateKeys(keys: VerificationKey[], header: TokenHeader): VerificationKey[] {
  const named = header.kid === '' ? undefined : keys.find(({ kid }) => kid === header.kid);
  if (named) return [named];
  return keys.filter(({ alg }) => alg === '' || alg === header.alg);
}

/** How each algorithm signs and verifies: its digest, the key type it needs, and the signature scheme. */
const SIGNATURE_PARAMS: Record<SignatureAlgorithm, { digest: string | null; keyType: string; scheme: 'pkcs1' | 'pss' | 'ecdsa' | 'eddsa' }> = {
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

type Scheme = (typeof SIGNATURE_PARAMS)[SignatureAlgorithm]['scheme'];

/** node:crypto's key options for a scheme: PSS padding with the given salt length, ECDSA signatures as r ‖ s as JWS writes them. */
function schemeKey(scheme: Scheme, key: KeyObject, pssSaltLength: number) {
  if (scheme === 'pss') return { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: pssSaltLength };
  return scheme === 'ecdsa' ? { key, dsaEncoding: 'ieee-p1363' as const } : key;
}

/**
 * How a verifier reads what JWS leaves to it. OPA's `io.jwt.verify_*` take any PSS salt length
 * (Go's `rsa.VerifyPSS` without options) and split an ECDSA signature in half whatever its
 * length (`verifyES`); `decode_verify`, through jwx, wants the salt as long as the digest and r ‖ s
 * exactly twice the curve's size.
 */
interface VerifyRules {
  pssSaltLength: number;
  ecdsaHalves: boolean;
}

const VERIFY_BUILTIN_RULES: VerifyRules = { pssSaltLength: constants.RSA_PSS_SALTLEN_AUTO, ecdsaHalves: true };
const JWX_RULES: VerifyRules = { pssSaltLength: constants.RSA_PSS_SALTLEN_DIGEST, ecdsaHalves: false };

/** A DER INTEGER of unsigned big-endian bytes. */
function derInteger(bytes: Buffer): Buffer {
  const first = bytes.findIndex((b) => b !== 0);
  const magnitude = first < 0 ? Buffer.alloc(1) : bytes.subarray(first);
  const body = (magnitude[0] as number) & 0x80 ? Buffer.concat([Buffer.alloc(1), magnitude]) : magnitude;
  return Buffer.concat([Buffer.from([0x02, ...derLength(body.length)]), body]);
}

const derLength = (n: number): number[] => (n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : [0x82, n >> 8, n & 0xff]);

/** An ECDSA signature's two halves (r, then s with any odd byte) as the DER node:crypto reads. */
function halvesAsDer(signature: Buffer): Buffer {
  const half = Math.floor(signature.length / 2);
  const integers = Buffer.concat([derInteger(signature.subarray(0, half)), derInteger(signature.subarray(half))]);
  return Buffer.concat([Buffer.from([0x30, ...derLength(integers.length)]), integers]);
}

/**
 * Whether `signature` signs `data` under `key` in `algorithm`, read by `rules`. A key of another
 * type never verifies, as Go's verifiers refuse it.
 */
function verifiesWith(algorithm: SignatureAlgorithm, key: KeyObject, data: Buffer, signature: Buffer, rules: VerifyRules): boolean {
  const { digest, keyType, scheme } = SIGNATURE_PARAMS[algorithm];
  if (key.asymmetricKeyType !== keyType) return false;
  try {
    if (scheme === 'ecdsa' && rules.ecdsaHalves) return verify(digest, data, { key, dsaEncoding: 'der' }, halvesAsDer(signature));
    return verify(digest, data, schemeKey(scheme, key, rules.pssSaltLength), signature);
  } catch {
    return false;
  }
}

/**
 * `io.jwt.verify_<alg>(token, certificate)` for a public-key algorithm. A private JWK never
 * verifies: OPA's verifiers take only a public key.
 */
export function jwtVerifyPublicKey(algorithm: SignatureAlgorithm, token: string, certificate: string): boolean | undefined {
  const keys = verificationKeys(certificate);
  const jws = parseJws(token);
  const signature = jws?.signature;
  if (!keys || !jws || !signature) return undefined;
  const data = Buffer.from(jws.signed, 'utf8');
  return candidateKeys(keys, jws.header).some(
    (key) => !key.private && verifiesWith(algorithm, key.key, data, signature, VERIFY_BUILTIN_RULES),
  );
}

/** `decode_verify`'s constraints, as OPA's parseTokenConstraints reads them. */
interface TokenConstraints {
  /** The `cert` constraint's keys (possibly none), or undefined without one. */
  keys: VerificationKey[] | undefined;
  secret: string;
  alg: string;
  iss: string;
  aud: string;
  /** Nanoseconds since the epoch, a float64 in OPA too. */
  time: number;
}

const STRING_CONSTRAINTS = ['secret', 'alg', 'iss', 'aud'] as const;
const isStringConstraint = (name: string): name is (typeof STRING_CONSTRAINTS)[number] => (STRING_CONSTRAINTS as readonly string[]).includes(name);

/**
 * The constraints object read as OPA reads it, undefined where OPA errs: an unknown name, a
 * `cert` that is not a string of keys, another string constraint that is not a string, a `time`
 * that is not a non-negative number, or not exactly one of `cert` and a non-empty `secret`.
 * Without `time`, `now` (the evaluation's `time.now_ns()`).
 */
function tokenConstraints(object: JsonObject, now: () => number): TokenConstraints | undefined {
  const parsed: TokenConstraints = { keys: undefined, secret: '', alg: '', iss: '', aud: '', time: -1 };
  for (const [name, value] of Object.entries(object)) {
    if (name === 'cert') {
      parsed.keys = typeof value === 'string' ? verificationKeys(value) : undefined;
      if (!parsed.keys) return undefined;
    } else if (name === 'time') {
      if (typeof value !== 'number' || value < 0) return undefined;
      parsed.time = value;
    } else if (isStringConstraint(name) && typeof value === 'string') {
      parsed[name] = value;
    } else {
      return undefined;
    }
  }
  if ((parsed.keys === undefined) === (parsed.secret === '')) return undefined;
  if (parsed.time === -1) parsed.time = now();
  return parsed;
}

/** HMAC digests by JWS algorithm. */
const HMAC_DIGESTS: Record<string, string> = { HS256: 'sha256', HS384: 'sha384', HS512: 'sha512' };

const hmac = (alg: string, key: Buffer | string, data: Buffer): Buffer => createHmac(HMAC_DIGESTS[alg] as string, key).update(data).digest();

const isPublicKeyAlgorithm = (alg: string): alg is SignatureAlgorithm => (PUBLIC_KEY_ALGORITHMS as readonly string[]).includes(alg);

/**
 * Whether the token's signature verifies under the constraints in the algorithm its header names
 * (jwsbb.Verify in OPA): public keys chosen as `candidateKeys` does for a `cert`, private JWKs by
 * their public half, read by jwx's rules; the bytes of a `secret` for HMAC. A key that does not fit the algorithm, or an unknown algorithm, never
 * verifies.
 */
function constraintsVerify(constraints: TokenConstraints, jws: Jws, signature: Buffer): boolean {
  const { alg } = jws.header;
  const data = Buffer.from(jws.signed, 'utf8');
  if (constraints.keys) {
    return isPublicKeyAlgorithm(alg) && candidateKeys(constraints.keys, jws.header).some(({ key }) => verifiesWith(alg, key, data, signature, JWX_RULES));
  }
  if (!HMAC_DIGESTS[alg]) return false;
  const mac = hmac(alg, constraints.secret, data);
  return mac.length === signature.length && timingSafeEqual(mac, signature);
}

/** RFC 7515 4.1.1 and 4.1.11: `alg` is required, and a critical parameter OPA does not know invalidates the header. */
const validHeader = (header: TokenHeader): boolean => header.alg !== '' && !header.unknown.some((name) => header.crit.has(name));

/** What `decode_verify` answers for a token that does not verify or meet the constraints. */
const UNVERIFIED = '[false,{},{}]';

/** A token whose every level verified: its innermost payload, and that header's and payload's JSON text as decoded. */
interface VerifiedToken {
  payload: JsonObject;
  headerText: string;
  payloadText: string;
}

/**
 * The innermost token's header and payload once every level verifies (a header with `cty` `JWT`,
 * in any case, nests the next token as its payload, untrimmed); `UNVERIFIED`, or undefined where
 * OPA errs.
 */
function verifiedToken(token: string, constraints: TokenConstraints): VerifiedToken | typeof UNVERIFIED | undefined {
  const jws = parseJws(token);
  if (!jws) return undefined;
  if (!validHeader(jws.header) || (constraints.alg !== '' && constraints.alg !== jws.header.alg)) return UNVERIFIED;
  if (!jws.signature) return undefined;
  if (!constraintsVerify(constraints, jws, jws.signature)) return UNVERIFIED;
  const payloadText = base64UrlBytes(jws.payloadSegment)?.toString('utf8');
  if (payloadText === undefined) return undefined;
  if (jws.header.cty.toLowerCase() === 'jwt') return verifiedToken(payloadText, constraints);
  const payload = jsonObject(payloadText);
  return payload && { payload, headerText: jws.headerText, payloadText };
}

/** An audience claim meets the `aud` constraint when it is that string, or an array holding it ('' without one). */
function validAudience(aud: unknown, wanted: string): boolean {
  return aud === wanted || (Array.isArray(aud) && aud.includes(wanted));
}

/**
 * Whether the payload's registered claims meet the constraints, checked in OPA's order, which
 * decides whether a token failing one check and malformed in a later one is false or undefined:
 * `iss` as required, `aud` (a token with an audience needs the constraint to name it, and one
 * without fails an `aud` constraint), `exp` after and `nbf` not after the constraint's time, in
 * seconds. Undefined where OPA errs: an `iss` that is not a string when one is required, an `exp`
 * or `nbf` that is not a number.
 */
function claimsHold(payload: JsonObject, constraints: TokenConstraints): boolean | undefined {
  const { iss, aud, exp, nbf } = payload;
  const seconds = constraints.time / 1e9;
  if (constraints.iss !== '') {
    if (!('iss' in payload)) return false;
    if (typeof iss !== 'string') return undefined;
    if (iss !== constraints.iss) return false;
  }
  if ('aud' in payload ? !validAudience(aud, constraints.aud) : constraints.aud !== '') return false;
  if ('exp' in payload) {
    if (typeof exp !== 'number') return undefined;
    if (seconds >= exp) return false;
  }
  if ('nbf' in payload && typeof nbf !== 'number') return undefined;
  return !('nbf' in payload) || seconds >= (nbf as number);
}

/**
 * `io.jwt.decode_verify(token, constraints)` as JSON text: `[true, header, payload]` when the
 * token's signature verifies under the constraints' key and its claims meet them,
 * `[false, {}, {}]` when not, and undefined where OPA errs (malformed token or constraints). The
 * header and payload are the text the token holds, so the module parses its integers exactly, as
 * OPA does; a parsed value would pass through JavaScript numbers, which round those beyond 2^53.
 * `now` gives the evaluation's `time.now_ns()`, read only when the constraints carry no `time`.
 */
export function jwtDecodeVerify(token: string, constraints: JsonObject, now: () => number): string | undefined {
  const parsed = tokenConstraints(constraints, now);
  if (!parsed) return undefined;
  const verified = verifiedToken(token, parsed);
  if (verified === undefined || verified === UNVERIFIED) return verified;
  const holds = claimsHold(verified.payload, parsed);
  return holds === undefined ? undefined : holds ? `[true,${verified.headerText},${verified.payloadText}]` : UNVERIFIED;
}

/** The first key of a JWK or JWK set, as OPA signs with; undefined if there is none. */
function firstJwk(text: string): JsonObject | undefined {
  const jwk = jsonObject(text);
  const first: unknown = Array.isArray(jwk?.keys) ? jwk.keys[0] : jwk;
  return isObject(first) ? first : undefined;
}

/**
 * The signature of `data` in `alg` under a JWK: HMAC with the bytes of an `oct` key's `k`, or a
 * private key of the type the algorithm needs (PSS salted with the digest's length); undefined
 * for a key that does not fit, as jwsbb.Sign refuses it.
 */
function jwkSignature(alg: string, jwk: JsonObject, data: Buffer): Buffer | undefined {
  if (HMAC_DIGESTS[alg]) {
    const secret = jwk.kty === 'oct' && typeof jwk.k === 'string' ? base64UrlBytes(jwk.k) : undefined;
    return secret && hmac(alg, secret, data);
  }
  if (!isPublicKeyAlgorithm(alg)) return undefined;
  const { digest, keyType, scheme } = SIGNATURE_PARAMS[alg];
  try {
    const key = createPrivateKey({ key: jwk as never, format: 'jwk' });
    if (key.asymmetricKeyType !== keyType) return undefined;
    return sign(digest, data, schemeKey(scheme, key, constants.RSA_PSS_SALTLEN_DIGEST));
  } catch {
    return undefined;
  }
}

const isJsonText = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/**
 * `io.jwt.encode_sign_raw(headers, payload, key)`, and `encode_sign` given the JSON text of its
 * operands: a compact JWS of the header and payload text exactly as given, signed with the first
 * key of the JWK (set) in the header's `alg`. Undefined where OPA errs: no key, a header that is
 * not JSON or whose `alg` is missing or not a JWS algorithm, a payload that is not JSON when the
 * header's `typ` is `JWT` or not a string, a key that does not fit the algorithm.
 */
export function jwtEncodeSign(headers: string, payload: string, key: string): string | undefined {
  const jwk = firstJwk(key);
  const header = jsonObject(headers);
  const { alg, typ } = header ?? {};
  if (!jwk || typeof alg !== 'string' || !isAlgorithm(alg)) return undefined;
  if ((typeof typ !== 'string' || typ === 'JWT') && !isJsonText(payload)) return undefined;
  const signed = `${Buffer.from(headers).toString('base64url')}.${Buffer.from(payload).toString('base64url')}`;
  const signature = jwkSignature(alg, jwk, Buffer.from(signed, 'utf8'));
  return signature && `${signed}.${signature.toString('base64url')}`;
}
