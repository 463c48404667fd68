import ipaddr from 'ipaddr.js';
import { operationDraft, type AuditLog, type ThrottledSummary } from './audit-log.ts';
import { clockMs, RateLimiter, type RateDecision, type RateLimit } from './rate-limiter.ts';
import type { Store } from './store.ts';
import type { SharedTable } from './threads/shared-table.ts';

/**
 * Refusals of callers nobody authenticated (no key, an unknown or revoked key, a path that names
 * no route), limited per client address before anything is stored. Anyone who can reach the
 * port can send them, and each used to cost an audit entry, so a flood grew the log without
 * bound. Within its client's token bucket a refusal is recorded as usual, one entry each, which
 * keeps what a misconfigured client or a prober tried; beyond it the caller gets 429 with
 * `Retry-After`, and the refusals are only counted, then written as one audit entry per client
 * per `flush`. docs/security.md says what this bounds.
 *
 * Authenticated callers are limited per key (core/rate-limiter.ts) and never pass here, so a
 * valid key works from an address whose refusals are throttled.
 */
export const UNAUTHENTICATED_LIMIT: RateLimit = { ratePerSecond: 0.2, burst: 10 };

/** The one tier of the throttle's buckets. */
type Tier = 'unauthenticated';

export class UnauthenticatedThrottle {
  private readonly buckets: RateLimiter<Tier>;
  /** Client → the refusals counted since the last flush. */
  private counted = new Map<string, ThrottledSummary>();

  constructor(
    private readonly store: Store,
    private readonly audit: AuditLog,
    limit: RateLimit = UNAUTHENTICATED_LIMIT,
    /** In `--threads` mode, the buckets every thread shares (core/threads/thread-group.ts). */
    shared: SharedTable | null = null,
  ) {
    this.buckets = new RateLimiter<Tier>({ unauthenticated: limit }, shared);
  }

  /**
   * Takes a token from the bucket of the client at `address` (as the socket reports it) for one
   * refusal. Not allowed: the caller answers 429 and records nothing, the refusal is counted.
   */
  take(address: string, nowMs = clockMs()): RateDecision {
    const client = clientOf(address);
    const decision = this.buckets.take(client, 'unauthenticated', nowMs);
    if (!decision.allowed) {
      const at = new Date().toISOString();
      const summary = this.counted.get(client);
      if (summary) {
        summary.refused++;
        summary.to = at;
      } else {
        this.counted.set(client, { client, refused: 1, from: at, to: at });
      }
    }
    return decision;
  }

  /**
   * Writes the refusals counted since the last flush, one audit entry per client, in one
   * transaction; and forgets the buckets that have refilled, so memory holds only the clients
   * seen lately. The server calls it periodically and when it closes.
   */
  async flush(): Promise<void> {
    this.buckets.sweep();
    if (this.counted.size === 0) return;
    const summaries = [...this.counted.values()];
    this.counted = new Map();
    await this.store.commit(() => {
      for (const throttled of summaries) {
        this.audit.appendInTransaction(operationDraft('SYSTEM', 'unauthenticated refusals', null, 429, { code: 'rate_limited', throttled }));
      }
    });
  }
}

/**
 * Whom a bucket belongs to: an IPv4 address as is (also when it arrives IPv4-mapped on a
 * dual-stack socket), an IPv6 address by its /64, the block one subscriber usually holds, so
 * that walking through its addresses does not buy fresh buckets.
 */
export function clientOf(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const v6 = parsed as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  return `${ipaddr.IPv6.networkAddressFromCIDR(`${v6.toString()}/64`).toString()}/64`;
}
