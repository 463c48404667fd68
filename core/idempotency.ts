import type { Database } from 'lmdb';
import type { Env } from './env.ts';
import { GatehouseError } from './errors.ts';
import { sweepExpired } from './chunked-scan.ts';
import type { Store } from './store.ts';

/**
 * Idempotency keys with Stripe's semantics. A key is scoped to the API key that sent it. The
 * first response is stored (in the same transaction as the writes it reports) and replayed byte
 * for byte to a retry with the same body; a different body is a mismatch; a retry while the
 * first is still running is told so. Records expire after the retention period.
 *
 * In-flight requests are tracked in memory: one server process owns the API, and a request that
 * dies with the process leaves nothing stored, so a retry after a restart simply runs. In
 * cluster mode a claim is also registered with the cluster (`SharedClaims`), so the same key in
 * flight on another instance is refused too, and a retry first sees every commit made before it
 * claimed: a reply stored by another instance is replayed, not worked out again.
 */
export interface SharedClaims {
  /** Registers `id` as in flight across the cluster; false when another request holds it. */
  claim(id: string): Promise<boolean>;
  release(id: string): void;
  /** Resolves once this instance has applied every commit the cluster held when called. */
  sync(): Promise<void>;
}
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

  constructor(
    store: Store,
    retentionMs: number,
    private readonly shared: SharedClaims | null = null,
  ) {
    this.db = store.database<IdempotencyRecord, IdempotencyKey>('idempotency');
    this.retentionMs = retentionMs;
  }

  /** Claims `key` for this request unless a stored or running request already holds it. */
  async claim(key: IdempotencyKey, fingerprint: string, now = Date.now()): Promise<Claim> {
    const memo = key.join('\u0000');
    if (this.inFlight.has(memo)) return { kind: 'in_flight' };
    this.inFlight.add(memo);
    if (this.shared) {
      try {
        const claimed = await this.shared.claim(memo);
        if (!claimed) {
          this.inFlight.delete(memo);
          return { kind: 'in_flight' };
        }
        await this.shared.sync();
      } catch (error) {
        this.release(key);
        throw error;
      }
    }
    const stored = this.answered(key, now);
    if (!stored) return { kind: 'claimed' };
    this.release(key);
    if (stored.fingerprint !== fingerprint) return { kind: 'mismatch' };
    return { kind: 'replay', response: { status: stored.status, headers: stored.headers, body: stored.body } };
  }

  /**
   * Refuses, inside the committing transaction, to store a second reply for a key: two
   * instances that both claimed it (a claim outlives its time to live only in a request stuck
   * for longer) cannot both commit.
   */
  checkUnanswered(key: IdempotencyKey, now = Date.now()): void {
    // A single node holds its claims in memory: no second request for the key got this far.
    if (!this.shared) return;
    if (this.answered(key, now)) throw new GatehouseError('idempotency_in_flight', 'a request with this Idempotency-Key was answered meanwhile; retry to get its reply');
  }

  private answered(key: IdempotencyKey, now: number): IdempotencyRecord | undefined {
    const stored = this.db.get(key);
    return stored && stored.expiresAt > now ? stored : undefined;
  }

  /** Stores the response to replay; call inside `store.commit`. */
  saveInTransaction(key: IdempotencyKey, fingerprint: string, response: StoredResponse, now = Date.now()): void {
    this.db.put(key, Object.assign({}, response, { fingerprint, createdAt: now, expiresAt: now + this.retentionMs }));
  }

  release(key: IdempotencyKey): void {
    const memo = key.join('\u0000');
    if (this.inFlight.delete(memo)) this.shared?.release(memo);
  }

  /** Deletes expired records, a chunk per event-loop turn; resolves to how many. */
  purgeExpired(store: Store, now = Date.now()): Promise<number> {
    return sweepExpired(store, this.db, (record) => record.expiresAt <= now);
  }
}
