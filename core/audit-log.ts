import type { Database, Key, Transaction } from 'lmdb';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { canonicalJson, sha256Hex } from './canonical-json.ts';
import type { Env } from './env.ts';
import { requestId } from './ids.ts';
import type { Verdict } from './policy-evaluator.ts';
import type { Store, TransactionValue } from './store.ts';
import { readStoredRecords, type StoredRecord } from './stored-records.ts';

/**
 * The append-only, hash-chained audit log. Entry n stores the hash of entry n-1 and its own hash
 * over everything else it holds, so changing, removing or reordering any entry breaks the chain
 * from that point on. Entries are numbered from 1; the first links to GENESIS.
 *
 * The tail is read inside the write transaction rather than cached, so writers in other processes
 * (the CLI) chain correctly behind the server: LMDB serialises write transactions.
 */
export const GENESIS = '0'.repeat(64);

/** Entries a yielding verification checks per event-loop turn. */
const VERIFY_CHUNK = 1_000;

/** What a policy evaluation concluded, as recorded next to the call that asked for it. */
export interface PolicyResultSummary {
  allow: boolean;
  gate: string | null;
  nextAction: string | null;
  reasons: string[];
  error: string | null;
}

/**
 * What the proxy gateway did with a request it handled. Only gateway entries carry it, so the
 * hashes of every other entry are the same with or without this field in the type.
 */
export interface ProxiedSummary {
  /** The gateway route's name. */
  route: string;
  /** `forwarded`, `denied`, `held`, `sent` (a held request, after approval) or `failed` (no upstream answer). */
  outcome: 'forwarded' | 'denied' | 'held' | 'sent' | 'failed';
  upstreamStatus: number | null;
  upstreamLatencyMs: number | null;
}

/**
 * Refusals of unauthenticated requests from one client beyond its limit, counted rather than
 * recorded one by one (core/unauthenticated-throttle.ts). Only those entries carry it.
 */
export interface ThrottledSummary {
  /** The client's address (for IPv6, its /64). */
  client: string;
  refused: number;
  /** When the first and the last of them arrived. */
  from: string;
  to: string;
}

/** How a request's RFC 9421 signature fared, as recorded: names only, never key material. */
export interface SignatureSummary {
  /** `bootstrap`: unsigned, allowed because the key is registering its first signing key. */
  outcome: 'verified' | 'failed' | 'unsigned' | 'bootstrap';
  label: string | null;
  keyId: string | null;
  alg: string | null;
  /** The check that failed (docs/signatures.md), when `failed`. */
  failure: string | null;
  /** Present (true) when the signature was made with the key of the console session that authenticated the request (docs/console.md). */
  session?: true;
}

/** How an audit entry records a policy's verdict. */
export function verdictSummary(verdict: Verdict): PolicyResultSummary {
  return { allow: verdict.allow, error: verdict.error, gate: verdict.gate, nextAction: verdict.nextAction, reasons: verdict.reasons };
}

export interface AuditEntry {
  seq: number;
  at: string;
  requestId: string;
  keyId: string | null;
  env: Env | null;
  method: string;
  route: string;
  path: string;
  status: number;
  code: string | null;
  decisionId: string | null;
  traceRef: string | null;
  policy: string | null;
  moduleHash: string | null;
  inputDigest: string | null;
  result: PolicyResultSummary | null;
  traceparent: string | null;
  replayed: boolean;
  proxy?: ProxiedSummary;
  /** Entries of authenticated requests carry it; others (and entries older than signatures) do not. */
  signature?: SignatureSummary;
  throttled?: ThrottledSummary;
  prevHash: string;
  hash: string;
}

export type AuditDraft = Omit<AuditEntry, 'seq' | 'prevHash' | 'hash'>;

export interface ChainVerification {
  ok: boolean;
  /** Entries that hold, from the first. */
  entries: number;
  /** The hash of the last entry that holds (GENESIS when none does). */
  head: string;
  /** The first entry that does not hold, or where the log's end disagrees with the tail record, and why. */
  broken: { seq: number; reason: string } | null;
}

/**
 * An audit entry for an operation that is not an HTTP request (the server acting on its own, an
 * operator using the command line): the request-only fields stay null.
 */
export function operationDraft(
  method: 'SYSTEM' | 'CLI',
  route: string,
  keyId: string | null,
  status: number,
  extra: Partial<AuditDraft> = {},
): AuditDraft {
  return {
    at: new Date().toISOString(),
    requestId: requestId(),
    keyId,
    env: null,
    method,
    route,
    path: '',
    status,
    code: null,
    decisionId: null,
    traceRef: null,
    policy: null,
    moduleHash: null,
    inputDigest: null,
    result: null,
    traceparent: null,
    replayed: false,
    ...extra,
  };
}

export function entryHash(entry: Omit<AuditEntry, 'hash'>): string {
  return sha256Hex(canonicalJson(entry));
}

/**
 * The entry that follows `tail`, before its hash. Members are written in sorted order, so its
 * canonical JSON is written natively (core/canonical-json.ts). The optional ones are always
 * present, undefined when absent: canonical JSON drops undefined members, so the hash is the same
 * as without them, and every entry has one shape. Every member of AuditEntry is listed.
 */
function linkedEntry(draft: AuditDraft, tail: ChainTail): Omit<AuditEntry, 'hash'> {
  return {
    at: draft.at,
    code: draft.code,
    decisionId: draft.decisionId,
    env: draft.env,
    inputDigest: draft.inputDigest,
    keyId: draft.keyId,
    method: draft.method,
    moduleHash: draft.moduleHash,
    path: draft.path,
    policy: draft.policy,
    prevHash: tail.hash,
    proxy: draft.proxy,
    replayed: draft.replayed,
    requestId: draft.requestId,
    result: draft.result,
    route: draft.route,
    seq: tail.seq + 1,
    signature: draft.signature,
    status: draft.status,
    throttled: draft.throttled,
    traceRef: draft.traceRef,
    traceparent: draft.traceparent,
  };
}

/** An entry's number and hash: the chain's tail, a checkpoint's anchor. */
export interface ChainTail {
  seq: number;
  hash: string;
}

/** The tail record as read: null when none is stored, `damaged` when it cannot be used. */
export type TailRecord = ChainTail | null | { damaged: string };

/** Checks a tail record read from the store or an export. */
export function tailRecord(value: unknown): TailRecord {
  if (value === undefined || value === null) return null;
  const tail = value as Partial<ChainTail>;
  if (typeof tail !== 'object' || !Number.isSafeInteger(tail.seq) || typeof tail.hash !== 'string') return { damaged: 'not a {seq, hash} record' };
  return { seq: tail.seq!, hash: tail.hash };
}

/**
 * Checks stored entries one by one against the rules of the chain, and the last against the
 * tail record, which every append rewrites in the same transaction: entries removed from the end,
 * or added or rewritten there without the tail, disagree with it. Values are taken as read
 * (`unknown`), so a damaged entry is named rather than thrown over.
 */
export class ChainWalk {
  private count = 0;
  private last: ChainTail = { seq: 0, hash: GENESIS };
  private brokenAt: ChainVerification['broken'] = null;

  private tail: ChainTail | null = null;
  private tailDamage: string | null = null;

  /** `tail`: the tail record as read (see `tailRecord`); `later` when it is known only after the entries (`endWith`). */
  constructor(tail: TailRecord | 'later') {
    if (tail !== 'later') this.endWith(tail);
  }

  /**
   * Sets the tail record the log's end is checked against, for a log read in one pass where it
   * is written after the entries (the cluster's commit stream); call before `result`.
   */
  endWith(tail: TailRecord): void {
    this.tail = tail && 'damaged' in tail ? null : tail;
    this.tailDamage = tail && 'damaged' in tail ? tail.damaged : null;
  }

  /** The last entry that holds so far. */
  get head(): ChainTail {
    return this.last;
  }

  /** Checks the record stored under `key`; false once the chain is broken (here or before). */
  entry(key: Key, value: unknown): boolean {
    if (this.brokenAt) return false;
    const at = typeof key === 'number' ? key : this.last.seq + 1;
    const expected = this.last.seq + 1;
    const entry = value as Partial<AuditEntry> | null;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return this.break(at, `not an audit entry (a ${Array.isArray(entry) ? 'list' : typeof entry} is stored)`);
    const missing = (['seq', 'prevHash', 'hash'] as const).filter((field) => (field === 'seq' ? !Number.isSafeInteger(entry.seq) : typeof entry[field] !== 'string'));
    if (missing.length) return this.break(at, `not an audit entry: ${missing.join(', ')} missing or malformed`);
    if (key !== expected || entry.seq !== key) {
      return this.break(at, `expected entry ${expected}, found ${entry.seq}${entry.seq === key ? '' : ` stored at ${String(key)}`}`);
    }
    if (this.tail && expected > this.tail.seq) {
      return this.break(at, `beyond the tail record's last entry ${this.tail.seq}: added without rewriting the tail record`);
    }
    if (entry.prevHash !== this.last.hash) return this.break(at, `prevHash does not match the hash of entry ${key - 1}`);
    const { hash, ...rest } = entry as AuditEntry;
    let computed: string;
    try {
      computed = entryHash(rest);
    } catch (error) {
      return this.break(at, `contents cannot be hashed: ${(error as Error).message}`);
    }
    if (computed !== hash) return this.break(at, 'contents do not match the entry hash');
    if (this.tail && expected === this.tail.seq && hash !== this.tail.hash) {
      return this.break(at, 'the hash does not match the tail record: the last entry was rewritten');
    }
    this.last = { seq: key, hash };
    this.count++;
    return true;
  }

  /** A record under `key` that could not be decoded: the chain breaks there. */
  unreadable(key: Key, message: string): false {
    return this.brokenAt ? false : this.break(typeof key === 'number' ? key : this.last.seq + 1, `the stored value cannot be decoded (${message})`);
  }

  /** The walk's outcome, once every entry has been seen. */
  result(): ChainVerification {
    const head = this.last;
    if (!this.brokenAt && this.tailDamage !== null) this.break(head.seq + 1, `the tail record is damaged (${this.tailDamage}), so the end of the log cannot be checked`);
    if (!this.brokenAt && this.tail === null && head.seq > 0) {
      this.break(head.seq, 'no tail record, so the end of the log cannot be checked: it was removed (or the log predates it)');
    }
    if (!this.brokenAt && this.tail && head.seq > this.tail.seq) {
      this.break(this.tail.seq + 1, `beyond the tail record's last entry ${this.tail.seq}: added without rewriting the tail record`);
    }
    if (!this.brokenAt && this.tail && head.seq === this.tail.seq && head.hash !== this.tail.hash) {
      this.break(head.seq, 'the hash does not match the tail record: the last entry was rewritten');
    }
    if (!this.brokenAt && this.tail && head.seq < this.tail.seq) {
      const ends = head.seq === 0 ? 'no entry is left' : `the log ends at entry ${head.seq}`;
      this.break(head.seq + 1, `missing: the tail record names entry ${this.tail.seq}, but ${ends}: entries were removed from the end`);
    }
    return { ok: this.brokenAt === null, entries: this.count, head: head.hash, broken: this.brokenAt };
  }

  private break(seq: number, reason: string): false {
    this.brokenAt = { seq, reason };
    return false;
  }
}

/** The meta key the chain's tail record is stored under. */
export const TAIL_KEY = 'audit-tail';

/** The store database the entries are kept in, keyed by entry number. */
export const AUDIT_DATABASE = 'audit';

export class AuditLog {
  private readonly entries: Database<AuditEntry, number>;
  private readonly traces: Database<true, [Env, string, number]>;
  /** The chain's tail under TAIL_KEY, rewritten with every batch that appends. */
  private readonly meta: Database<ChainTail, string>;
  /** The tail, read and written once per write transaction however many entries it appends. */
  private readonly tailValue: TransactionValue<ChainTail>;
  /** Told each appended entry's number, inside its transaction (the checkpoint signer counts them). */
  private appended: ((seq: number) => void) | null = null;

  constructor(store: Store) {
    this.entries = store.database<AuditEntry, number>(AUDIT_DATABASE);
    this.traces = store.database<true, [Env, string, number]>('audit-trace');
    this.meta = store.database<ChainTail, string>('meta');
    this.tailValue = store.transactionValue(() => this.storedTail(), (tail) => this.meta.put(TAIL_KEY, tail));
  }

  /** Appends one entry; call inside `store.commit` so it lands with the writes it describes. */
  appendInTransaction(draft: AuditDraft): AuditEntry {
    const linked = linkedEntry(draft, this.tailValue.get());
    const entry = linked as AuditEntry;
    entry.hash = entryHash(linked);
    this.entries.put(entry.seq, entry);
    this.tailValue.set({ seq: entry.seq, hash: entry.hash });
    if (entry.env && entry.traceRef) this.traces.put([entry.env, entry.traceRef, entry.seq], true);
    this.appended?.(entry.seq);
    return entry;
  }

  /** Sets (or, with null, clears) the one listener told each appended entry's number. */
  onAppend(listener: ((seq: number) => void) | null): void {
    this.appended = listener;
  }

  /** The last entry's number and hash (0 and GENESIS when empty), this transaction's appends included. */
  tail(): ChainTail {
    return this.tailValue.get();
  }

  private storedTail(): ChainTail {
    const recorded = this.meta.get(TAIL_KEY);
    if (recorded) return recorded;
    // A log written before the tail was recorded: find it once.
    for (const { value } of this.entries.getRange({ reverse: true, limit: 1 })) return { seq: value.seq, hash: value.hash };
    return { seq: 0, hash: GENESIS };
  }

  /** Entry number `seq`, if it is stored. */
  entry(seq: number): AuditEntry | undefined {
    return this.entries.get(seq);
  }

  /** A trace's entries in order, only those recorded in `env`. */
  trace(env: Env, traceRef: string): AuditEntry[] {
    const out: AuditEntry[] = [];
    for (const key of this.traces.getKeys({ start: [env, traceRef, 0], end: [env, traceRef, Number.MAX_SAFE_INTEGER] })) {
      const entry = this.entries.get(key[2]);
      if (entry) out.push(entry);
    }
    return out;
  }

  *all(): Iterable<AuditEntry> {
    for (const { value } of this.entries.getRange()) yield value;
  }

  /**
   * A read snapshot, so that the entries, the tail record and the checkpoints read in it agree
   * while a server appends. The caller ends it with `done()`.
   */
  snapshot(): Transaction {
    return this.entries.useReadTransaction();
  }

  /** The tail record as stored, checked (`tail` instead falls back to the last entry). */
  recordedTail(transaction: Transaction): TailRecord {
    try {
      return tailRecord(this.meta.get(TAIL_KEY, { transaction }));
    } catch (error) {
      return { damaged: (error as Error).message };
    }
  }

  /** Every stored entry in key order, as stored: damaged ones are reported, not thrown. */
  stored(transaction: Transaction): Iterable<StoredRecord<AuditEntry>> {
    return readStoredRecords(this.entries, transaction);
  }

  /**
   * Walks the chain from the first entry, names the first link that does not hold, and checks
   * the last against the tail record. `visit` sees the head after each entry that holds.
   */
  verify(visit?: (head: ChainTail) => void, transaction?: Transaction): ChainVerification {
    const walk = this.walkChain(visit, transaction);
    for (;;) {
      const step = walk.next();
      if (step.done) return step.value;
    }
  }

  /**
   * `verify` for a server that goes on answering: the walk reads one snapshot, and gives the
   * event loop a turn after every VERIFY_CHUNK entries (about 10 ms), so a long log does not
   * hold every other request while it is checked.
   */
  async verifyYielding(): Promise<ChainVerification> {
    const walk = this.walkChain();
    for (;;) {
      const step = walk.next();
      if (step.done) return step.value;
      await nextTurn();
    }
  }

  /** The chain walk, pausing (yielding) after every VERIFY_CHUNK entries. */
  private *walkChain(visit?: (head: ChainTail) => void, transaction?: Transaction): Generator<void, ChainVerification> {
    const snapshot = transaction ?? this.snapshot();
    try {
      const walk = new ChainWalk(this.recordedTail(snapshot));
      let n = 0;
      for (const record of this.stored(snapshot)) {
        const holds = record.error === undefined ? walk.entry(record.key, record.value) : walk.unreadable(record.key, record.error);
        if (!holds) break;
        visit?.(walk.head);
        if (++n % VERIFY_CHUNK === 0) yield;
      }
      return walk.result();
    } finally {
      if (!transaction) snapshot.done();
    }
  }
}
