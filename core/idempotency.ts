import type { Database } from 'lmdb';
import type { Env } from './env.ts';
import type { Store } from './store.ts';

/**
 * Idempotency keys with Stripe's semantics. A key is scoped to the API key that sent it. The
 * first response is stored (in the same transaction as the writes it reports) and replayed byte
 * for byte to a retry with the same body; a different body is a mismatch; a retry while the
 * first is still running is told so. Records expire after the retention period.
 *
 * In-flight requests are tracked in memory: one server process owns the API, and a request that
 * dies with the process leaves nothing stored, so a retry after a restart simply runs.
 */
export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

interface IdempotencyRecord extends StoredResponse {
  fingerprint: string;
  createdAt: number;
  expiresAt: number;
}

export type IdempotencyKey = [Env, string, string];

export type Claim =
  | { kind: 'claimed' }
  | { kind: 'replay'; response: StoredResponse }
  | { kind: 'mismatch' }
  | { kind: 'in_flight' };

export class IdempotencyStore {
  private readonly db: Database<IdempotencyRecord, IdempotencyKey>;
  private readonly inFlight = new Set<string>();
  private readonly retentionMs: number;

  constructor(store: Store, retentionMs: number) {
    this.db = store.database<IdempotencyRecord, IdempotencyKey>('idempotency');
    this.retentionMs = retentionMs;
  }

  /** Claims `key` for this request unless a stored or running request already holds it. */
  claim(key: IdempotencyKey, fingerprint: string, now = Date.now()): Claim {
    const memo = key.join('\u0000');
    if (this.inFlight.has(memo)) return { kind: 'in_flight' };
    const stored = this.db.get(key);
    if (stored && stored.expiresAt > now) {
      if (stored.fingerprint !== fingerprint) return { kind: 'mismatch' };
      return { kind: 'replay', response: { status: stored.status, headers: stored.headers, body: stored.body } };
    }
    this.inFlight.add(memo);
    return { kind: 'claimed' };
  }

  /** Stores the response to replay; call inside `store.commit`. */
  saveInTransaction(key: IdempotencyKey, fingerprint: string, response: StoredResponse, now = Date.now()): void {
    this.db.put(key, Object.assign({}, response, { fingerprint, createdAt: now, expiresAt: now + this.retentionMs }));
  }

  release(key: IdempotencyKey): void {
    this.inFlight.delete(key.join('\u0000'));
  }

  /** Deletes expired records; returns how many. */
  async purgeExpired(store: Store, now = Date.now()): Promise<number> {
    const expired: IdempotencyKey[] = [];
    for (const { key, value } of this.db.getRange()) if (value.expiresAt <= now) expired.push(key);
    if (expired.length) await store.commit(() => expired.forEach((key) => this.db.remove(key)));
    return expired.length;
  }
}
