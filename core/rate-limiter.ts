import type { Env } from './env.ts';

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

export class RateLimiter<Tier extends string = Env> {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly limits: Record<Tier, RateLimit>) {}

  take(id: string, tier: Tier, nowMs = performance.now()): RateDecision {
    let bucket = this.buckets.get(id);
    if (!bucket) {
      const limit = this.limits[tier];
      bucket = { tokens: limit.burst, at: nowMs, limit };
      this.buckets.set(id, bucket);
    }
    const { ratePerSecond, burst } = bucket.limit;
    bucket.tokens = refilled(bucket, nowMs);
    bucket.at = nowMs;
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    const remaining = Math.floor(bucket.tokens);
    return {
      allowed,
      limit: burst,
      remaining,
      resetSeconds: Math.ceil((burst - bucket.tokens) / ratePerSecond),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / ratePerSecond)),
    };
  }

  /** Forgets a key's bucket (a revoked key needs none). */
  forget(id: string): void {
    this.buckets.delete(id);
  }

  /**
   * Forgets the buckets that have refilled: a fresh one is the same. Where ids are many and come
   * and go (client addresses), this keeps memory to those seen lately.
   */
  sweep(nowMs = performance.now()): void {
    for (const [id, bucket] of this.buckets) {
      if (refilled(bucket, nowMs) === bucket.limit.burst) this.buckets.delete(id);
    }
  }
}
