import type { Env } from './env.ts';
import type { SharedTable } from './threads/shared-table.ts';

/**
 * Token buckets, one per id (an API key, a client address), each under the limit of its tier (a
 * key's environment, say). A bucket holds up to `burst` tokens, refilled at `ratePerSecond`; a
 * request takes one. Buckets live in memory: limits protect this process, and a restart that
 * refills them is harmless.
 */
export interface RateLimit {
  ratePerSecond: number;
  burst: number;
}

/** Sandbox keys are for trying the API; production keys carry real traffic. */
export const DEFAULT_RATE_LIMITS: Record<Env, RateLimit> = {
  sandbox: { ratePerSecond: 100, burst: 200 },
  production: { ratePerSecond: 1000, burst: 2000 },
};

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the bucket is full again. */
  resetSeconds: number;
  /** Seconds until one token is available (0 when allowed). */
  retryAfterSeconds: number;
}

interface Bucket {
  tokens: number;
  at: number;
  limit: RateLimit;
}

/** The tokens a bucket holds at `nowMs`. */
function refilled(bucket: Bucket, nowMs: number): number {
  return Math.min(bucket.limit.burst, bucket.tokens + ((nowMs - bucket.at) / 1000) * bucket.limit.ratePerSecond);
}

/** A shared bucket's fields: its tokens and when they were counted (`clockMs`). */
export const BUCKET_FIELDS = 2;

/** Milliseconds on one clock for every thread of the process (each thread's `performance.now()` has its own origin). */
export function clockMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * In `--threads` mode (core/threads/thread-group.ts) the buckets are one set for every thread, in
 * shared memory, so a client's limit holds whichever thread its connections reach.
 */
export class RateLimiter<Tier extends string = Env> {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly limits: Record<Tier, RateLimit>,
    private readonly shared: SharedTable | null = null,
  ) {}

  take(id: string, tier: Tier, nowMs = clockMs()): RateDecision {
    if (this.shared) return this.takeShared(this.shared, id, tier, nowMs);
    let bucket = this.buckets.get(id);
    if (!bucket) {
      const limit = this.limits[tier];
      bucket = { tokens: limit.burst, at: nowMs, limit };
      this.buckets.set(id, bucket);
    }
    return takeToken(bucket, nowMs);
  }

  /** A shared bucket's fields are its tokens and their time; its limit is its tier's, as here. */
  private takeShared(table: SharedTable, id: string, tier: Tier, nowMs: number): RateDecision {
    const limit = this.limits[tier];
    return table.locked(() => {
      const slot = table.insert(id);
      // A full table (more clients than it holds, all within their refill time) counts this one from a full bucket.
      if (slot < 0) return takeToken({ tokens: limit.burst, at: nowMs, limit }, nowMs);
      const at = slot * BUCKET_FIELDS;
      const fresh = table.values[at + 1] === 0;
      const bucket = { tokens: fresh ? limit.burst : table.values[at]!, at: fresh ? nowMs : table.values[at + 1]!, limit };
      const decision = takeToken(bucket, nowMs);
      table.values[at] = bucket.tokens;
      table.values[at + 1] = bucket.at;
      return decision;
    });
  }

  /** Forgets a key's bucket (a revoked key needs none). */
  forget(id: string): void {
    this.buckets.delete(id);
    this.shared?.locked(() => {
      const slot = this.shared!.find(id);
      if (slot >= 0) this.shared!.remove(slot);
    });
  }

  /**
   * Forgets the buckets that have refilled: a fresh one is the same. Where ids are many and come
   * and go (client addresses), this keeps memory to those seen lately.
   */
  sweep(nowMs = clockMs()): void {
    for (const [id, bucket] of this.buckets) {
      if (refilled(bucket, nowMs) === bucket.limit.burst) this.buckets.delete(id);
    }
    const table = this.shared;
    // Every tier's limit is at most the largest: a bucket refilled to that is refilled whatever its tier.
    if (table) {
      const slowest = Object.values<RateLimit>(this.limits).reduce((a, b) => (b.burst / b.ratePerSecond > a.burst / a.ratePerSecond ? b : a));
      table.locked(() => table.sweep((slot) => nowMs - table.values[slot * BUCKET_FIELDS + 1]! >= (slowest.burst / slowest.ratePerSecond) * 1000));
    }
  }
}

/** Refills `bucket` to `nowMs` and takes a token from it if it holds one. */
function takeToken(bucket: Bucket, nowMs: number): RateDecision {
  const { ratePerSecond, burst } = bucket.limit;
  bucket.tokens = refilled(bucket, nowMs);
  bucket.at = nowMs;
  const allowed = bucket.tokens >= 1;
  if (allowed) bucket.tokens -= 1;
  return {
    allowed,
    limit: burst,
    remaining: Math.floor(bucket.tokens),
    resetSeconds: Math.ceil((burst - bucket.tokens) / ratePerSecond),
    retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / ratePerSecond)),
  };
}
