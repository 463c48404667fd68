import type { Env } from './env.ts';

/**
 * Per-key token buckets. Each key holds up to `burst` tokens, refilled at `ratePerSecond`; a
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
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly limits: Record<Env, RateLimit> = DEFAULT_RATE_LIMITS) {}

  take(keyId: string, env: Env, nowMs = performance.now()): RateDecision {
    const { ratePerSecond, burst } = this.limits[env];
    let bucket = this.buckets.get(keyId);
    if (!bucket) {
      bucket = { tokens: burst, at: nowMs };
      this.buckets.set(keyId, bucket);
    }
    bucket.tokens = Math.min(burst, bucket.tokens + ((nowMs - bucket.at) / 1000) * ratePerSecond);
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
  forget(keyId: string): void {
    this.buckets.delete(keyId);
  }
}
