import { ChainWalk, TAIL_KEY, tailRecord, type ChainVerification, type TailRecord } from '../audit-log.ts';
import type { ClusterLink } from './cluster-link.ts';
import { decodeCommit, decodeValue } from './write-set.ts';

/** The cluster's audit chain as its commit stream holds it. */
export interface StreamAuditVerification extends ChainVerification {
  /** Commits read from the stream. */
  commits: number;
  /** The commit holding the first link that does not hold (or the first missing commit); null when all hold. */
  brokenCommit: number | null;
}

/**
 * Walks the cluster's audit chain in the commit stream itself, from its first commit to the last
 * one at the start of the walk, independently of any instance's copy: every audit entry every
 * instance appended, in the stream's order, each checked against the one before it, and the
 * last against the last tail record written. A commit missing from the stream (deleted by an
 * administrator, or expired) breaks the walk where it was.
 */
export async function verifyStreamAudit(link: ClusterLink, progress?: (read: number, of: number) => void): Promise<StreamAuditVerification> {
  const info = await link.info();
  const last = info.state.last_seq;
  const walk = new ChainWalk('later');
  let tail: TailRecord = null;
  let brokenCommit: number | null = null;
  let missing: ChainVerification['broken'] = null;
  let read = 0;
  if (last > 0) {
    const messages = await link.commitsFrom(1);
    try {
      let expected = 1;
      for await (const message of messages) {
        read++;
        if (message.seq !== expected) {
          brokenCommit = expected;
          missing = { seq: walk.head.seq + 1, reason: `commits ${expected}–${message.seq - 1} are missing from the stream (deleted or expired)` };
          break;
        }
        expected++;
        if (!walkCommit(walk, message.data, (record) => (tail = record))) {
          brokenCommit = message.seq;
          break;
        }
        if (read % 10_000 === 0) progress?.(read, last);
        if (message.seq >= last) break;
      }
    } finally {
      await messages.close().catch(() => {});
    }
  }
  walk.endWith(tail);
  const result = walk.result();
  if (missing && result.ok) return { ...result, ok: false, broken: missing, commits: read, brokenCommit };
  return { ...result, commits: read, brokenCommit: result.ok ? null : (brokenCommit ?? last) };
}

/** Feeds one commit's audit entries to the walk; false once the chain is broken. */
function walkCommit(walk: ChainWalk, data: Uint8Array, onTail: (tail: TailRecord) => void): boolean {
  let ops;
  try {
    ops = decodeCommit(data).ops;
  } catch (error) {
    return walk.unreadable(walk.head.seq + 1, `a commit cannot be decoded: ${(error as Error).message}`);
  }
  for (const op of ops) {
    if (op.length !== 3) continue;
    const [database, key, value] = op;
    if (database === 'meta' && key === TAIL_KEY) {
      try {
        onTail(tailRecord(decodeValue(value)));
      } catch (error) {
        onTail({ damaged: (error as Error).message });
      }
    } else if (database === 'audit') {
      let entry: unknown;
      try {
        entry = decodeValue(value);
      } catch (error) {
        return walk.unreadable(key, (error as Error).message);
      }
      if (!walk.entry(key, entry)) return false;
    }
  }
  return true;
}
