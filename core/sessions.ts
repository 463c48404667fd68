import { randomBytes } from 'node:crypto';
import type { Database } from 'lmdb';
import { sha256Hex } from './canonical-json.ts';
import type { Env } from './env.ts';
import { GatehouseError } from './errors.ts';
import { principalOf, type KeyRecord, type KeyRegistry } from './keys.ts';
import type { Principal } from './principal.ts';
import { SessionCodes } from './session-codes.ts';
import { assertStillAuthorised, sessionSigningKey, type SessionSigningKey } from './session-signing-keys.ts';
import type { SigningKeyRegistry } from './signing-keys.ts';
import { sweepExpired } from './chunked-scan.ts';
import type { Store } from './store.ts';

/**
 * Console sessions: an API key exchanged for a short-lived random token, so that a browser holds
 * the token (in an HttpOnly cookie) rather than the key. Like keys, only the token's SHA-256 is
 * stored. A session ends when it has been idle for `idleMs`, `maxMs` after it began, when it is
 * signed out, or as soon as its key is no longer active: every use reads the key again, so a
 * session is never worth more than its key is now.
 *
 * A session opened with a one-time sign-in code (core/session-codes.ts) carries the public key
 * its page signs with (core/session-signing-keys.ts): requests on it must be signed with that key.
 */
export interface SessionLimits {
  idleMs: number;
  maxMs: number;
}

export const SESSION_LIMITS: SessionLimits = { idleMs: 8 * 60 * 60 * 1000, maxMs: 12 * 60 * 60 * 1000 };

/**
 * The idle expiry moves forward at most this often: a session in use costs one write per
 * interval, not one per request, and its idle limit is honoured to within this.
 */
const TOUCH_INTERVAL_MS = 60 * 1000;

export interface SessionRecord {
  /** SHA-256 of the token: the record's key. */
  hash: string;
  keyId: string;
  env: Env;
  createdAt: string;
  /** Epoch ms: the session ends at the earlier of these. */
  idleExpiresAt: number;
  expiresAt: number;
  /** The key the session's page signs with, when it was opened with a sign-in code (absent on records from before codes). */
  signingKey?: SessionSigningKey | null;
}

/** A session in use: who it authenticates and, when its idle expiry should move, the record to write. */
export interface ActiveSession {
  session: SessionRecord;
  principal: Principal;
  touched: SessionRecord | null;
}

const TOKEN_PREFIX = 'ghs_';

export class Sessions {
  private readonly db: Database<SessionRecord, string>;
  /** The one-time codes that open sessions bound to a page's key. */
  readonly codes: SessionCodes;

  constructor(
    private readonly store: Store,
    private readonly keys: KeyRegistry,
    readonly limits: SessionLimits = SESSION_LIMITS,
  ) {
    this.db = store.database<SessionRecord, string>('sessions');
    this.codes = new SessionCodes(store);
  }

  /**
   * A new session for an active key and its token, not yet stored: write it with `write` in the
   * request's transaction. With `signingKey`, the session's requests must be signed with it.
   */
  open(key: KeyRecord, now = Date.now(), signingKey: SessionSigningKey | null = null): { record: SessionRecord; token: string } {
    const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const record: SessionRecord = {
      hash: sha256Hex(token),
      keyId: key.id,
      env: key.env,
      createdAt: new Date(now).toISOString(),
      idleExpiresAt: Math.min(now + this.limits.idleMs, now + this.limits.maxMs),
      expiresAt: now + this.limits.maxMs,
      signingKey,
    };
    return { record, token };
  }

  /**
   * Redeems a sign-in code: a session for the key it was issued to, signing with the page's
   * public `jwk`. 401 for a code that is unknown, used or expired, or whose key or authorising
   * signing key is no longer active; 400 for a JWK that is not an Ed25519 or P-256 public key.
   * Nothing is stored: inside the request's transaction, `codes.assertUnused(code)`, then
   * `codes.remove(code)` and `write(record)`.
   */
  async redeem(code: string, jwk: Record<string, unknown>, signingKeys: SigningKeyRegistry, now = Date.now()) {
    const issued = this.codes.find(code, now);
    const key = this.activeKey(issued.keyId);
    const signingKey = await sessionSigningKey(signingKeys, jwk, issued.authorisedBy);
    assertStillAuthorised(signingKeys, key.id, signingKey);
    return { code: issued, principal: principalOf(key), ...this.open(key, now, signingKey) };
  }

  /** Stores a session; call inside `store.commit`. */
  write(record: SessionRecord): void {
    this.db.put(record.hash, record);
  }

  /** Ends a session; call inside `store.commit`. */
  remove(record: SessionRecord): void {
    this.db.remove(record.hash);
  }

  /** The session a presented token belongs to and the principal it acts as, or `unauthenticated` saying why not. */
  resolve(token: string, now = Date.now()): ActiveSession {
    const session = this.db.get(sha256Hex(token));
    if (!session || Math.min(session.idleExpiresAt, session.expiresAt) <= now) {
      throw new GatehouseError('unauthenticated', 'this session has ended or is not known: sign in again');
    }
    const key = this.activeKey(session.keyId);
    const idleExpiresAt = Math.min(now + this.limits.idleMs, session.expiresAt);
    const touched = idleExpiresAt - session.idleExpiresAt >= TOUCH_INTERVAL_MS ? Object.assign({}, session, { idleExpiresAt }) : null;
    return { session, principal: principalOf(key), touched };
  }

  private activeKey(id: string): KeyRecord {
    const key = this.keys.get(id);
    if (!key || key.status !== 'active') {
      throw new GatehouseError('unauthenticated', `the API key of this session is ${key ? key.status : 'gone'}: sign in again`);
    }
    return key;
  }

  /** Removes the sessions that have ended and the codes that have expired; returns how many. */
  async purgeExpired(now = Date.now()): Promise<number> {
    const sessions = await sweepExpired(this.store, this.db, (session) => Math.min(session.idleExpiresAt, session.expiresAt) <= now);
    return sessions + (await sweepExpired(this.store, this.codes.db, (code) => code.expiresAt <= now));
  }
}
