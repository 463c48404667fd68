import type { AuditCheckpoint, AuditCheckpoints } from './audit-checkpoints.ts';
import { checkpointPayload } from './audit-checkpoints.ts';
import type { AuditLog, ChainTail, ChainVerification } from './audit-log.ts';
import type { AuditVerifyingKey } from './audit-signing-key.ts';

/**
 * What `gatehouse audit verify` can say about a log: whether the chain holds and ends where the
 * tail record says, which checkpoints are signed by a trusted key and sit on the chain, and how
 * many entries after the last of them are only chained (docs/security.md, "Audit log integrity").
 */
export interface AuditVerification {
  /** False when anything shows tampering or damage, or a checkpoint cannot be checked. */
  ok: boolean;
  chain: ChainVerification;
  /** The entry number and hash of the last entry that holds. */
  head: ChainTail;
  /** Checkpoints whose signature holds and whose entry is on the chain. */
  signed: number;
  /** The last of them, null when none is. */
  lastSigned: AuditCheckpoint | null;
  /** Entries after `lastSigned` (all of them when it is null): chained but not signed. */
  unsigned: number;
  /** Each checkpoint that does not hold, and why. */
  checkpointProblems: string[];
  /** The keys signatures were checked against. */
  keyIds: string[];
}

/**
 * Checks checkpoints as they are read and as the chain walk reaches their entries. Checkpoints
 * must all be given before the walk reaches them: the walk keeps only the head.
 */
export class CheckpointCheck {
  private readonly keys: Map<string, AuditVerifyingKey>;
  /** Checkpoints whose signature holds, by entry number, until the walk reaches their entry. */
  private readonly pending = new Map<number, AuditCheckpoint>();
  private reached = 0;
  private signed = 0;
  private lastSigned: AuditCheckpoint | null = null;
  private readonly problems: string[] = [];

  constructor(keys: readonly AuditVerifyingKey[]) {
    this.keys = new Map(keys.map((key) => [key.keyId, key]));
  }

  /** One stored checkpoint, `value` as read; `label` names it in problems. */
  add(label: string, value: unknown): void {
    const checkpoint = value as Partial<AuditCheckpoint> | null;
    const malformed =
      typeof checkpoint !== 'object' || checkpoint === null
        ? ['the whole record']
        : (['seq', 'hash', 'at', 'keyId', 'signature'] as const).filter((field) => (field === 'seq' ? !Number.isSafeInteger(checkpoint.seq) : typeof checkpoint[field] !== 'string'));
    if (malformed.length) return this.problem(`${label}: not a checkpoint (${malformed.join(', ')} missing or malformed)`);
    const { seq, hash, at, keyId, signature } = checkpoint as AuditCheckpoint;
    const key = this.keys.get(keyId);
    if (!key) return this.problem(`checkpoint at entry ${seq}: signed by key ${keyId}, which is not a trusted key, so it proves nothing`);
    if (!key.verify(checkpointPayload({ seq, hash, at, keyId }), signature)) {
      return this.problem(`checkpoint at entry ${seq}: the signature does not hold: forged, or altered after signing`);
    }
    if (seq <= this.reached) return this.problem(`checkpoint at entry ${seq}: given after its entry, so it could not be checked against it`);
    if (this.pending.has(seq)) return this.problem(`checkpoint at entry ${seq}: given twice`);
    this.pending.set(seq, { seq, hash, at, keyId, signature });
  }

  /** A checkpoint that could not be decoded. */
  unreadable(label: string, message: string): void {
    this.problem(`${label}: the stored value cannot be decoded (${message})`);
  }

  /** The chain walk's head, after each entry that holds. */
  reach(head: ChainTail): void {
    this.reached = head.seq;
    const checkpoint = this.pending.get(head.seq);
    if (!checkpoint) return;
    this.pending.delete(head.seq);
    if (checkpoint.hash !== head.hash) {
      return this.problem(`checkpoint at entry ${head.seq}: signed for hash ${checkpoint.hash}, but the entry's hash is ${head.hash}: the entry, or one before it, was rewritten`);
    }
    this.signed++;
    this.lastSigned = checkpoint;
  }

  /** The verification, once the walk is over. */
  result(chain: ChainVerification): AuditVerification {
    // Entries are numbered from 1 and hold up to the first that does not: their count is the head's number.
    const head = { seq: chain.entries, hash: chain.head };
    for (const seq of [...this.pending.keys()].sort((a, b) => a - b)) {
      this.problem(
        chain.broken
          ? `checkpoint at entry ${seq}: not reached: the chain holds only up to entry ${head.seq}`
          : `checkpoint at entry ${seq}: the log ends at entry ${head.seq}: signed entries were removed`,
      );
    }
    return {
      ok: chain.ok && this.problems.length === 0,
      chain,
      head,
      signed: this.signed,
      lastSigned: this.lastSigned,
      unsigned: head.seq - (this.lastSigned?.seq ?? 0),
      checkpointProblems: this.problems,
      keyIds: [...this.keys.keys()],
    };
  }

  private problem(message: string): void {
    this.problems.push(message);
  }
}

/** Verifies the log in the store, in one read snapshot, against the trusted keys. */
export function verifyAuditLog(audit: AuditLog, checkpoints: AuditCheckpoints, keys: readonly AuditVerifyingKey[]): AuditVerification {
  const snapshot = audit.snapshot();
  try {
    const check = new CheckpointCheck(keys);
    for (const record of checkpoints.stored(snapshot)) {
      const label = `checkpoint stored under ${String(record.key)}`;
      if (record.error !== undefined) check.unreadable(label, record.error);
      else check.add(label, record.value);
    }
    return check.result(audit.verify((head) => check.reach(head), snapshot));
  } finally {
    snapshot.done();
  }
}
