import type { Database, Transaction } from 'lmdb';
import type { AuditLog } from './audit-log.ts';
import type { AuditSigningKey } from './audit-signing-key.ts';
import { canonicalJson } from './canonical-json.ts';
import type { Store } from './store.ts';
import { readStoredRecords, type StoredRecord } from './stored-records.ts';
import { log } from './log.ts';

/**
 * Signed checkpoints of the audit chain. The chain alone shows an entry changed in place, but not
 * one removed, added or rewritten together with everything after it: whoever can write the file
 * can recompute every hash. A checkpoint is an Ed25519 signature over one entry's number and hash,
 * which the hash chain ties to every entry before it; without the key, those entries can no
 * longer be removed or rewritten unnoticed. Entries after the last checkpoint are only chained.
 */
export interface AuditCheckpoint {
  /** The entry signed for, and with it every entry before it. */
  seq: number;
  /** That entry's hash. */
  hash: string;
  /** When the checkpoint was signed (ISO 8601). */
  at: string;
  /** The signing key's RFC 7638 thumbprint (core/audit-signing-key.ts). */
  keyId: string;
  /** Ed25519 over `checkpointPayload`, base64url. */
  signature: string;
}

/** What a checkpoint's signature covers: its other members in canonical JSON, with a purpose no other signature has. */
export function checkpointPayload(checkpoint: Omit<AuditCheckpoint, 'signature'>): string {
  const { at, hash, keyId, seq } = checkpoint;
  return canonicalJson({ at, hash, keyId, purpose: 'gatehouse audit checkpoint', seq });
}

/** How often the server signs: after this many entries, or this long after an entry, whichever comes first. */
export interface CheckpointSchedule {
  everyEntries: number;
  everyMs: number;
}

export const CHECKPOINT_DEFAULTS: CheckpointSchedule = { everyEntries: 1000, everyMs: 10_000 };

/** The stored checkpoints, by entry number. */
export class AuditCheckpoints {
  private readonly db: Database<AuditCheckpoint, number>;

  constructor(
    private readonly store: Store,
    private readonly audit: AuditLog,
  ) {
    this.db = store.database<AuditCheckpoint, number>('audit-checkpoints');
  }

  /** Every stored checkpoint in order, as stored: damaged ones are reported, not thrown. */
  stored(transaction: Transaction): Iterable<StoredRecord<AuditCheckpoint>> {
    return readStoredRecords(this.db, transaction);
  }

  /** The entry number the last checkpoint signs for, 0 when there is none. */
  lastSeq(): number {
    const [last] = this.db.getKeys({ reverse: true, limit: 1 });
    return typeof last === 'number' ? last : 0;
  }

  /** The last checkpoint, undefined when there is none. */
  last(): AuditCheckpoint | undefined {
    for (const { value } of this.db.getRange({ reverse: true, limit: 1 })) return value;
    return undefined;
  }

  /**
   * Signs the chain's tail in a transaction of its own, unless a checkpoint covers it already.
   * Resolves with the entry number the last checkpoint now covers.
   */
  sign(key: AuditSigningKey): Promise<number> {
    return this.store.commit(() => {
      const tail = this.audit.tail();
      const last = this.lastSeq();
      if (tail.seq <= last) return last;
      const unsigned = { seq: tail.seq, hash: tail.hash, at: new Date().toISOString(), keyId: key.keyId };
      this.db.put(tail.seq, { ...unsigned, signature: key.sign(checkpointPayload(unsigned)) });
      return tail.seq;
    });
  }
}

/**
 * Signs checkpoints while the server runs: after `everyEntries` entries, `everyMs` after entries
 * were added, and once more when it stops. Signing never joins a request's transaction: an append
 * only compares two numbers, and the checkpoint is committed on its own, in a later batch.
 */
export class AuditCheckpointSigner {
  private readonly checkpoints: AuditCheckpoints;
  private signedSeq = 0;
  private signing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    store: Store,
    private readonly audit: AuditLog,
    private readonly key: AuditSigningKey,
    private readonly schedule: CheckpointSchedule,
  ) {
    this.checkpoints = new AuditCheckpoints(store, audit);
  }

  start(): void {
    this.signedSeq = this.checkpoints.lastSeq();
    this.audit.onAppend((seq) => {
      if (seq - this.signedSeq >= this.schedule.everyEntries) this.signSoon();
    });
    this.timer = setInterval(() => {
      if (this.audit.tail().seq > this.signedSeq) this.signSoon();
    }, this.schedule.everyMs).unref();
  }

  /** Stops the schedule and signs what is left; call before the store closes. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.audit.onAppend(null);
    await this.signing;
    this.signedSeq = await this.checkpoints.sign(this.key);
  }

  private signSoon(): void {
    this.signing ??= this.checkpoints
      .sign(this.key)
      .then((seq) => void (this.signedSeq = seq))
      .catch((error: unknown) => log.error({ err: error }, 'signing an audit checkpoint failed; the next one will cover its entries'))
      .finally(() => (this.signing = null));
  }
}
