import { createPublicKey, createSecretKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, importJWK } from 'jose';
import type { Database } from 'lmdb';
import { GatehouseError } from './errors.ts';
import { JOSE_ALGORITHM, type SignatureAlgorithm } from './signatures/algorithms.ts';
import { assertFollows, nextRevision, type Revisioned } from './revision.ts';
import type { Store } from './store.ts';

/**
 * The keys an API key signs its requests with (RFC 9421), registered as JWKs. A signing key's
 * `kid` is the `keyid` its signatures name. Asymmetric keys are stored public only: a JWK
 * carrying private members is refused. An `hmac-sha256` key is a shared secret (`{"kty":"oct",
 * "k":…}`), which the server must store to verify with; it is never shown again.
 *
 * Several keys may be active at once, so a client can rotate: register the new key, move its
 * signers over, revoke the old one. A revoked key stays on record so the audit log's references
 * to it keep meaning something; its kid can never be registered again.
 */
export type SigningKeyStatus = 'active' | 'revoked';

export interface SigningKeyRecord extends Revisioned {
  /** The API key this signing key belongs to. */
  owner: string;
  kid: string;
  alg: SignatureAlgorithm;
  /** Public members only, except `k` for an HMAC secret. */
  jwk: JsonWebKey;
  /** RFC 7638 thumbprint (SHA-256, base64url) of a public key; null for an HMAC secret (it would hash the secret). */
  thumbprint: string | null;
  status: SigningKeyStatus;
  createdAt: string;
  createdBy: string;
  revokedAt: string | null;
  revokedBy: string | null;
}


export interface RegisterSigningKey {
  jwk: Record<string, unknown>;
  alg?: string;
}

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'priv'];
const PUBLIC_MEMBERS: Record<string, string[]> = { OKP: ['kty', 'crv', 'x'], EC: ['kty', 'crv', 'x', 'y'], RSA: ['kty', 'n', 'e'], oct: ['kty', 'k'] };
const KID = /^[\x21\x23-\x5b\x5d-\x7e]{1,128}$/;
/** Enough for overlapping rotations; a bound keeps one API key from filling the store. */
export const MAX_ACTIVE_SIGNING_KEYS = 10;

/** The algorithm a JWK's type implies: each key type serves exactly one of the four. */
export function impliedAlgorithm(jwk: Record<string, unknown>): SignatureAlgorithm {
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') return 'ed25519';
  if (jwk.kty === 'EC' && jwk.crv === 'P-256') return 'ecdsa-p256-sha256';
  if (jwk.kty === 'RSA') return 'rsa-pss-sha512';
  if (jwk.kty === 'oct') return 'hmac-sha256';
  throw new GatehouseError('invalid_request', 'the JWK must be an Ed25519 (OKP), P-256 (EC), RSA or oct key');
}

function invalid(detail: string): GatehouseError {
  return new GatehouseError('invalid_request', detail);
}

/** What the API shows of a signing key: an HMAC secret never leaves the server. */
export function signingKeyView(record: SigningKeyRecord): Omit<SigningKeyRecord, 'revision'> {
  const { revision: _revision, ...view } = record;
  if (record.alg !== 'hmac-sha256') return view;
  const { k: _secret, ...jwk } = record.jwk;
  return Object.assign(view, { jwk });
}

/** A node:crypto key for verifying (or, for HMAC, computing) signatures with this record. */
export function keyObject(record: Pick<SigningKeyRecord, 'alg' | 'jwk'>): KeyObject {
  return record.alg === 'hmac-sha256'
    ? createSecretKey(Buffer.from(String(record.jwk.k), 'base64url'))
    : createPublicKey({ key: record.jwk, format: 'jwk' });
}

export class SigningKeyRegistry {
  private readonly db: Database<SigningKeyRecord, [string, string]>;
  /** Key objects by owner and kid. A kid is never re-registered, so an entry never goes stale. */
  private readonly keyObjects = new Map<string, KeyObject>();

  constructor(store: Store) {
    this.db = store.database<SigningKeyRecord, [string, string]>('signing-keys');
  }

  /**
   * Validates a JWK and returns the record to store with `write`. Refuses (400) private key
   * material, unsupported key types, an `alg` that does not fit the key, weak keys and a JWK
   * `jose` cannot import; 409 when the kid is taken or the owner has too many active keys.
   */
  async prepare(owner: string, request: RegisterSigningKey, createdBy: string): Promise<SigningKeyRecord> {
    const jwk = request.jwk;
    const alg = impliedAlgorithm(jwk);
    if (request.alg !== undefined && request.alg !== alg) {
      throw invalid(`a ${String(jwk.kty)} key signs with ${alg}, not ${request.alg}`);
    }
    if (jwk.alg !== undefined && jwk.alg !== JOSE_ALGORITHM[alg] && !(alg === 'ed25519' && jwk.alg === 'Ed25519')) {
      throw invalid(`the JWK's alg ${String(jwk.alg)} does not match ${alg} (${JOSE_ALGORITHM[alg]})`);
    }
    if (alg !== 'hmac-sha256') {
      const secret = PRIVATE_MEMBERS.filter((member) => member in jwk);
      if (secret.length) throw invalid(`the JWK holds private key material (${secret.join(', ')}): register the public key only`);
    }
    if (jwk.use !== undefined && jwk.use !== 'sig') throw invalid('the JWK use must be sig');
    if (jwk.kid !== undefined && (typeof jwk.kid !== 'string' || !KID.test(jwk.kid))) {
      throw invalid('kid must be 1-128 visible ASCII characters without quotes or backslashes');
    }
    // A thumbprint of a shared secret is a hash of it: HMAC keys must name themselves.
    if (alg === 'hmac-sha256' && jwk.kid === undefined) throw invalid('an hmac-sha256 key needs a kid');
    const members = Object.fromEntries(PUBLIC_MEMBERS[jwk.kty as string]!.map((m) => [m, jwk[m]]));
    try {
      await importJWK(Object.assign({}, members, { ext: true }) as never, JOSE_ALGORITHM[alg]);
    } catch (error) {
      throw invalid(`the JWK is not a valid ${alg} key: ${(error as Error).message}`);
    }
    if (alg === 'rsa-pss-sha512' && Buffer.from(String(jwk.n), 'base64url').length < 256) throw invalid('RSA keys must be at least 2048 bits');
    if (alg === 'hmac-sha256' && Buffer.from(String(jwk.k), 'base64url').length < 32) throw invalid('an hmac-sha256 secret must be at least 32 bytes');
    const thumbprint = alg === 'hmac-sha256' ? null : await calculateJwkThumbprint(members as never, 'sha256');
    const kid = (jwk.kid as string | undefined) ?? thumbprint!;
    if (this.db.get([owner, kid])) throw new GatehouseError('conflict', `signing key ${kid} is already registered for ${owner}`);
    if (this.list(owner).filter((r) => r.status === 'active').length >= MAX_ACTIVE_SIGNING_KEYS) {
      throw new GatehouseError('conflict', `${owner} already has ${MAX_ACTIVE_SIGNING_KEYS} active signing keys; revoke one first`);
    }
    return {
      owner,
      kid,
      alg,
      jwk: Object.assign({}, members, { kid }) as JsonWebKey,
      thumbprint,
      status: 'active',
      createdAt: new Date().toISOString(),
      createdBy,
      revokedAt: null,
      revokedBy: null,
    };
  }

  /** Stores a record; call inside `store.commit`. */
  write(record: SigningKeyRecord): void {
    this.db.put([record.owner, record.kid], record);
  }

  get(owner: string, kid: string): SigningKeyRecord | undefined {
    // A kid that could never have been registered is not looked up (LMDB keys are bounded).
    return KID.test(kid) ? this.db.get([owner, kid]) : undefined;
  }

  /** The owner's signing keys, revoked ones included, by kid. */
  list(owner: string): SigningKeyRecord[] {
    const out: SigningKeyRecord[] = [];
    for (const { key, value } of this.db.getRange({ start: [owner] })) {
      if (key[0] !== owner) break;
      out.push(value);
    }
    return out;
  }

  hasActive(owner: string): boolean {
    return this.list(owner).some((r) => r.status === 'active');
  }

  /** Refuses (409) `next` when another request changed the signing key since `next` was derived; call inside `store.commit` before writing. */
  assertCurrent(next: SigningKeyRecord): void {
    assertFollows(this.db.get([next.owner, next.kid]), next, `signing key ${next.kid}`);
  }

  /** The record marked revoked by `by`; write it with `write`. 404 unknown, 409 already revoked. */
  revoke(owner: string, kid: string, by: string): SigningKeyRecord {
    const record = this.get(owner, kid);
    if (!record) throw new GatehouseError('not_found', `no signing key ${kid} for ${owner}`);
    if (record.status === 'revoked') throw new GatehouseError('conflict', `signing key ${kid} is already revoked`);
    return Object.assign({}, record, { status: 'revoked', revokedAt: new Date().toISOString(), revokedBy: by, revision: nextRevision(record) });
  }

  /** An active signing key of `owner` and its key object, for verification. */
  active(owner: string, kid: string): { record: SigningKeyRecord; key: KeyObject } | undefined {
    const record = this.get(owner, kid);
    if (!record || record.status !== 'active') return undefined;
    const cacheKey = `${owner}\u0000${kid}`;
    let key = this.keyObjects.get(cacheKey);
    if (!key) {
      key = keyObject(record);
      this.keyObjects.set(cacheKey, key);
    }
    return { record, key };
  }
}
