import type { Database } from 'lmdb';
import { canonicalJson, sha256Hex } from './canonical-json.ts';
import type { Env } from './env.ts';
import { requestId } from './ids.ts';
import type { Verdict } from './policy-evaluator.ts';
import type { Store } from './store.ts';

/**
 * The append-only, hash-chained audit log. Entry n stores the hash of entry n-1 and its own hash
 * over everything else it holds, so changing, removing or reordering any entry breaks the chain
 * from that point on. Entries are numbered from 1; the first links to GENESIS.
 *
 * The tail is read inside the write transaction rather than cached, so writers in other processes
 * (the CLI) chain correctly behind the server: LMDB serialises write transactions.
 */
export const GENESIS = '0'.repeat(64);

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

/** How a request's RFC 9421 signature fared, as recorded: names only, never key material. */
export interface SignatureSummary {
  /** `bootstrap`: unsigned, allowed because the key is registering its first signing key. */
  outcome: 'verified' | 'failed' | 'unsigned' | 'bootstrap';
  label: string | null;
  keyId: string | null;
  alg: string | null;
  /** The check that failed (docs/signatures.md), when `failed`. */
  failure: string | null;
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
  prevHash: string;
  hash: string;
}

export type AuditDraft = Omit<AuditEntry, 'seq' | 'prevHash' | 'hash'>;

export interface ChainVerification {
  ok: boolean;
  entries: number;
  head: string;
  /** The first entry that does not hold, and why. */
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
    traceRef: draft.traceRef,
    traceparent: draft.traceparent,
  };
}

interface ChainTail {
  seq: number;
  hash: string;
}

const TAIL_KEY = 'audit-tail';

export class AuditLog {
  private readonly entries: Database<AuditEntry, number>;
  private readonly traces: Database<true, [Env, string, number]>;
  /** The chain's tail under TAIL_KEY, rewritten with every append: one small read per append instead of a cursor. */
  private readonly meta: Database<ChainTail, string>;

  constructor(store: Store) {
    this.entries = store.database<AuditEntry, number>('audit');
    this.traces = store.database<true, [Env, string, number]>('audit-trace');
    this.meta = store.database<ChainTail, string>('meta');
  }

  /** Appends one entry; call inside `store.commit` so it lands with the writes it describes. */
  appendInTransaction(draft: AuditDraft): AuditEntry {
    const tail = this.tail();
    const linked = linkedEntry(draft, tail);
    const entry = linked as AuditEntry;
    entry.hash = entryHash(linked);
    this.entries.put(entry.seq, entry);
    this.meta.put(TAIL_KEY, { seq: entry.seq, hash: entry.hash });
    if (entry.env && entry.traceRef) this.traces.put([entry.env, entry.traceRef, entry.seq], true);
    return entry;
  }

  /** The last entry's number and hash (0 and GENESIS when empty). */
  tail(): ChainTail {
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

  /** Walks the chain from the first entry and names the first link that does not hold. */
  verify(): ChainVerification {
    let expectedSeq = 1;
    let prevHash = GENESIS;
    let count = 0;
    for (const { key, value } of this.entries.getRange()) {
      const broken = (reason: string): ChainVerification => ({ ok: false, entries: count, head: prevHash, broken: { seq: key, reason } });
      if (key !== expectedSeq || value.seq !== key) return broken(`expected entry ${expectedSeq}, found ${value.seq} stored at ${key}`);
      if (value.prevHash !== prevHash) return broken(`prevHash does not match the hash of entry ${key - 1}`);
      const { hash, ...rest } = value;
      if (entryHash(rest) !== hash) return broken('contents do not match the entry hash');
      prevHash = hash;
      expectedSeq++;
      count++;
    }
    return { ok: true, entries: count, head: prevHash, broken: null };
  }
}
