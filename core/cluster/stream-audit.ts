import { AuditExportError, EXPORT_TYPE, type ExportHeader, type ExportLine } from '../audit-export.ts';
import { AUDIT_DATABASE, ChainWalk, TAIL_KEY, tailRecord, type ChainTail, type ChainVerification, type TailRecord } from '../audit-log.ts';
import type { ClusterLink } from './cluster-link.ts';
import { decodeCommit, decodeValue, type WriteOp } from './write-set.ts';


/** The cluster's audit chain as its commit stream holds it. */
export interface StreamAuditVerification extends ChainVerification {
  /** Commits read from the stream. */
  commits: number;
  /** The commit holding the first link that does not hold (or the first missing commit); null when all hold. */
  brokenCommit: number | null;
}

/** One commit of the stream, by its sequence: its write set's operations, or why it cannot be read. */
type StreamCommit = { seq: number; ops: WriteOp[] } | { seq: number; unreadable: string };

/** Commits `from`–`last` were not in the stream where they should have been. */
class MissingCommits {
  constructor(
    readonly from: number,
    readonly through: number,
  ) {}

  get reason(): string {
    return `commits ${this.from}–${this.through} are missing from the stream (deleted or expired)`;
  }
}

/**
 * The stream's commits 1 to `last` in order; a gap (commits deleted by an administrator, or
 * expired) ends them with a MissingCommits. `progress` hears every 10,000 commits read.
 */
async function* commitsThrough(link: ClusterLink, last: number, progress?: (read: number, of: number) => void): AsyncGenerator<StreamCommit | MissingCommits> {
  if (last === 0) return;
  const messages = await link.commitsFrom(1);
  try {
    let expected = 1;
    for await (const message of messages) {
      if (message.seq !== expected) {
        yield new MissingCommits(expected, message.seq - 1);
        return;
      }
      expected++;
      try {
        yield { seq: message.seq, ops: decodeCommit(message.data).ops };
      } catch (error) {
        yield { seq: message.seq, unreadable: `a commit cannot be decoded: ${(error as Error).message}` };
      }
      if (message.seq % 10_000 === 0) progress?.(message.seq, last);
      if (message.seq >= last) return;
    }
  } finally {
    await messages.close().catch(() => {});
  }
}

/**
 * Walks the cluster's audit chain in the commit stream itself, from its first commit to the last
 * one at the start of the walk, independently of any instance's copy: every audit entry every
 * instance appended, in the stream's order, each checked against the one before it, and the
 * last against the last tail record written. A commit missing from the stream (deleted by an
 * administrator, or expired) breaks the walk where it was.
 */
export async function verifyStreamAudit(link: ClusterLink, progress?: (read: number, of: number) => void): Promise<StreamAuditVerification> {
  const last = (await link.info()).state.last_seq;
  const walk = new ChainWalk('later');
  let tail: TailRecord = null;
  let brokenCommit: number | null = null;
  let missing: ChainVerification['broken'] = null;
  let read = 0;
  for await (const commit of commitsThrough(link, last, progress)) {
    if (commit instanceof MissingCommits) {
      brokenCommit = commit.from;
      missing = { seq: walk.head.seq + 1, reason: commit.reason };
      break;
    }
    read++;
    if (!walkCommit(walk, commit, (record) => (tail = record))) {
      brokenCommit = commit.seq;
      break;
    }
  }
  walk.endWith(tail);
  const result = walk.result();
  if (missing && result.ok) return { ...result, ok: false, broken: missing, commits: read, brokenCommit };
  return { ...result, commits: read, brokenCommit: result.ok ? null : (brokenCommit ?? last) };
}

/** Feeds one commit's audit entries to the walk; false once the chain is broken. */
function walkCommit(walk: ChainWalk, commit: StreamCommit, onTail: (tail: TailRecord) => void): boolean {
  if ('unreadable' in commit) return walk.unreadable(walk.head.seq + 1, commit.unreadable);
  for (const op of commit.ops) {
    if (op.length !== 3) continue;
    const [database, key, value] = op;
    if (database === 'meta' && key === TAIL_KEY) {
      try {
        onTail(tailRecord(decodeValue(value)));
      } catch (error) {
        onTail({ damaged: (error as Error).message });
      }
    } else if (database === AUDIT_DATABASE) {
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

/**
 * The values a commit puts in `database` (only under `key`, when given), decoded; an undecodable
 * one is an AuditExportError.
 */
function* putsIn(commit: StreamCommit, database: string, key?: unknown): Generator<unknown> {
  if ('unreadable' in commit) throw new AuditExportError(`commit ${commit.seq}: ${commit.unreadable}`);
  for (const op of commit.ops) {
    if (op.length !== 3 || op[0] !== database || (key !== undefined && op[1] !== key)) continue;
    try {
      yield decodeValue(op[2]);
    } catch (error) {
      throw new AuditExportError(`commit ${commit.seq}: a value in ${database} cannot be decoded (${(error as Error).message})`);
    }
  }
}

/**
 * The cluster's audit log as an export (core/audit-export.ts) read from the commit stream, for
 * `gatehouse audit verify --export`. Commits 1 to the last one at the start are read twice, the
 * first time for the tail record the header carries, so the export never holds more than one
 * commit in memory. It holds no checkpoints and names no public key: in cluster mode each
 * instance signs checkpoints over its own copy with its own key, and keeps them there
 * (core/store.ts, LOCAL_ONLY); an instance's `audit export --data-dir` carries its own.
 */
export async function* streamExportLines(link: ClusterLink, progress?: (read: number, of: number) => void): AsyncGenerator<ExportLine> {
  const last = (await link.info()).state.last_seq;
  let tail: ChainTail | null = null;
  for await (const commit of commitsThrough(link, last, progress)) {
    if (commit instanceof MissingCommits) throw new AuditExportError(commit.reason);
    for (const value of putsIn(commit, 'meta', TAIL_KEY)) tail = value as ChainTail;
  }
  const header: ExportHeader = { type: EXPORT_TYPE, version: 1, exportedAt: new Date().toISOString(), tail, publicKey: null };
  yield { kind: 'header', line: JSON.stringify(header) };
  for await (const commit of commitsThrough(link, last)) {
    if (commit instanceof MissingCommits) throw new AuditExportError(commit.reason);
    for (const entry of putsIn(commit, AUDIT_DATABASE)) yield { kind: 'entry', line: JSON.stringify(entry) };
  }
}
