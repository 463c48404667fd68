import { createHash } from 'node:crypto';
import type { Database } from 'lmdb';
import { sweepExpired } from '../chunked-scan.ts';
import { GatehouseError } from '../errors.ts';
import type { Store } from '../store.ts';
import type { SharedTable } from '../threads/shared-table.ts';

/**
 * Refuses a signature seen before: the same signature bytes, or the same `nonce` from the same
 * signing key, while the signature could still be accepted. What has been seen is kept in LMDB
 * (so a restart does not reopen the window) until it could no longer verify anyway, and pruned
 * periodically. Markers of requests still being committed are also held in memory, so two
 * copies of a signature arriving together cannot both pass. In cluster mode the markers are
 * claimed across the cluster as well (`shared`), so a signature used on one instance is refused
 * on the others.
 */
export interface ReplayMarkers {
  signature: Buffer;
  /** The signing key that made the signature; scopes the nonce. */
  signer: string;
  nonce: string | null;
}

/** Replay markers claimed across a cluster (core/cluster/shared-replay-marks.ts). */
export interface SharedReplayMarks {
  /**
   * Claims every marker until `until` (ms since the epoch); false when another instance holds
   * one already. Rejects when the cluster cannot answer.
   */
  claim(markers: string[], until: number): Promise<boolean>;
}

/** What a verified signature claimed on this instance, to claim across the cluster too. */
export interface ClaimedMarkers {
  markers: string[];
  until: number;
}

/** A shared marker's fields: until when it is claimed, and when it may be forgotten (0: not stored yet). */
export const REPLAY_FIELDS = 2;

/**
 * How long a stored marker stays in the threads' shared table: past it, every thread's reads of
 * LMDB see it stored (lmdb-js renews a thread's read snapshot within a turn of the event loop).
 */
const SHARED_AFTER_STORED_MS = 1000;

export class ReplayGuard {
  private readonly seen: Database<number, string>;
  private readonly pending = new Map<string, number>();
  /** In cluster mode, where the markers are claimed across the cluster. */
  shared: SharedReplayMarks | null = null;

  /**
   * `threads`: in `--threads` mode, the markers being stored are held in memory every thread of
   * the process shares (core/threads/thread-group.ts) instead of this thread's own.
   */
  constructor(
    store: Store,
    private readonly threads: SharedTable | null = null,
  ) {
    this.seen = store.database<number, string>('signature-replay');
  }

  private markers(request: ReplayMarkers): string[] {
    const out = [`sig:${createHash('sha256').update(request.signature).digest('base64url')}`];
    if (request.nonce !== null) out.push(`nonce:${request.signer}:${request.nonce}`);
    return out;
  }

  /**
   * Records the markers until `until` (ms since the epoch) and returns them, or returns null
   * when one of them was seen here and has not expired.
   */
  claim(request: ReplayMarkers, until: number, now = Date.now()): string[] | null {
    const markers = this.markers(request);
    const table = this.threads;
    if (table) {
      if (!table.locked(() => this.claimShared(table, markers, until, now))) return null;
    } else {
      for (const marker of markers) {
        const expiry = this.pending.get(marker) ?? this.seen.get(marker);
        if (expiry !== undefined && expiry > now) return null;
      }
      for (const marker of markers) this.pending.set(marker, until);
    }
    for (const marker of markers) void this.seen.put(marker, until).finally(() => this.stored(marker));
    return markers;
  }

  private claimShared(table: SharedTable, markers: string[], until: number, now: number): boolean {
    for (const marker of markers) {
      const slot = table.find(marker);
      const expiry = slot >= 0 ? table.values[slot * REPLAY_FIELDS] : this.seen.get(marker);
      if (expiry !== undefined && expiry > now) return false;
    }
    for (const marker of markers) {
      let slot = table.insert(marker);
      if (slot < 0) {
        table.sweep((s) => table.values[s * REPLAY_FIELDS]! <= now || (table.values[s * REPLAY_FIELDS + 1]! !== 0 && table.values[s * REPLAY_FIELDS + 1]! <= now));
        slot = table.insert(marker);
        if (slot < 0) throw new GatehouseError('not_ready', 'too many signed requests are being recorded at once; retry shortly');
      }
      table.values[slot * REPLAY_FIELDS] = until;
      table.values[slot * REPLAY_FIELDS + 1] = 0;
    }
    return true;
  }

  private stored(marker: string): void {
    const table = this.threads;
    if (!table) {
      this.pending.delete(marker);
      return;
    }
    table.locked(() => {
      const slot = table.find(marker);
      if (slot >= 0) table.values[slot * REPLAY_FIELDS + 1] = Date.now() + SHARED_AFTER_STORED_MS;
    });
  }

  /** Deletes markers that have expired, a chunk per event-loop turn; resolves to how many. */
  purgeExpired(store: Store, now = Date.now()): Promise<number> {
    return sweepExpired(store, this.seen, (until) => until <= now);
  }
}
