import { randomBytes } from 'node:crypto';
import type { Database } from 'lmdb';
import { sha256Hex } from './canonical-json.ts';
import type { Env } from './env.ts';
import { GatehouseError } from './errors.ts';
import { principalOf, type KeyRecord, type KeyRegistry } from './keys.ts';
import type { Principal } from './principal.ts';
import type { Store } from './store.ts';

/**
 * Console sessions: an API key exchanged for a short-lived random token, so that a browser holds
 * the token (in an HttpOnly cookie) rather than the key. Like keys, only the token's SHA-256 is
 * stored. A session ends when it has been idle for `idleMs`, `maxMs` after it began, when it is
 * signed out, or as soon as its key is no longer active: every use reads the key again, so a
 * session is never worth more than its key is now.
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

  constructor(
    private readonly store: Store,
    private readonly keys: KeyRegistry,
    readonly limits: SessionLimits = SESSION_LIMITS,
  ) {
    this.db = store.database<SessionRecord, string>('sessions');
  }

  /** A new session for an active key and its token, not yet stored: write it with `write` in the request's transaction. */
  open(key: KeyRecord, now = Date.now()): { record: SessionRecord; token: string } {
    const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const record: SessionRecord = {
      hash: sha256Hex(token),
      keyId: key.id,
      env: key.env,
      createdAt: new Date(now).toISOString(),
      idleExpiresAt: Math.min(now + this.limits.idleMs, now + this.limits.maxMs),
      expiresAt: now + this.limits.maxMs,
    };
    return { record, token };
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
    const key = this.keys.get(session.keyId);
    if (!key || key.status !== 'active') {
      throw new GatehouseError('unauthenticated', `the API key of this session is ${key ? key.status : 'gone'}: sign in again`);
    }
    const idleExpiresAt = Math.min(now + this.limits.idleMs, session.expiresAt);
    const touched = idleExpiresAt - session.idleExpiresAt >= TOUCH_INTERVAL_MS ? Object.assign({}, session, { idleExpiresAt }) : null;
    return { session, principal: principalOf(key), touched };
  }

  /** Removes the sessions that have ended; returns how many. */
  async purgeExpired(now = Date.now()): Promise<number> {
    const expired: string[] = [];
    for (const { key, value } of this.db.getRange()) if (Math.min(value.idleExpiresAt, value.expiresAt) <= now) expired.push(key);
    if (expired.length) await this.store.commit(() => expired.forEach((key) => this.db.remove(key)));
    return expired.length;
  }
}
