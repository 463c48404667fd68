import { randomBytes } from 'node:crypto';
import type { Database } from 'lmdb';
import { sha256Hex } from './canonical-json.ts';
import { GatehouseError } from './errors.ts';
import type { Store } from './store.ts';

/**
 * One-time sign-in codes (docs/console.md, "Keys that must sign"). A key that must sign its
 * requests gets a code with a request signed by one of its signing keys; the console's page
 * redeems it once, with the public key it will sign with, for a session. The code is short-lived
 * and, like session tokens and keys, stored only as its SHA-256.
 */
export interface SessionCodeRecord {
  /** SHA-256 of the code: the record's key. */
  hash: string;
  keyId: string;
  /** The kid of the signing key that signed the request for the code. */
  authorisedBy: string;
  createdAt: string;
  /** Epoch ms. */
  expiresAt: number;
}

/** Long enough to paste a code into a browser, short enough that a leaked one is soon worthless. */
export const SESSION_CODE_TTL_MS = 5 * 60 * 1000;

const CODE_PREFIX = 'ghc_';
/** The shape of every code issued: the prefix and 32 random bytes, base64url. */
export const SESSION_CODE_PATTERN = '^ghc_[A-Za-z0-9_-]{43}$';

export class SessionCodes {
  readonly db: Database<SessionCodeRecord, string>;

  constructor(store: Store) {
    this.db = store.database<SessionCodeRecord, string>('session-codes');
  }

  /** A new code for `keyId`, vouched for by its signing key `authorisedBy`; write the record with `write`. */
  issue(keyId: string, authorisedBy: string, now = Date.now()): { record: SessionCodeRecord; code: string } {
    const code = CODE_PREFIX + randomBytes(32).toString('base64url');
    const record: SessionCodeRecord = { hash: sha256Hex(code), keyId, authorisedBy, createdAt: new Date(now).toISOString(), expiresAt: now + SESSION_CODE_TTL_MS };
    return { record, code };
  }

  /** Stores a code; call inside `store.commit`. */
  write(record: SessionCodeRecord): void {
    this.db.put(record.hash, record);
  }

  /** The record of a code that may still be redeemed, or `unauthenticated`. */
  find(code: string, now = Date.now()): SessionCodeRecord {
    const record = this.db.get(sha256Hex(code));
    if (!record || record.expiresAt <= now) throw new GatehouseError('unauthenticated', 'this sign-in code is not known, was used already or has expired: request another');
    return record;
  }

  /** Refuses (409) a code another request redeemed since `record` was read; call inside `store.commit` before `remove`. */
  assertUnused(record: SessionCodeRecord): void {
    if (!this.db.get(record.hash)) throw new GatehouseError('conflict', 'this sign-in code was redeemed by another request');
  }

  /** Uses a code up; call inside `store.commit`. */
  remove(record: SessionCodeRecord): void {
    this.db.remove(record.hash);
  }
}
