import type { Database } from 'lmdb';
import type { AuditLog } from '../audit-log.ts';
import { sortableId } from '../ids.ts';
import { log } from '../log.ts';
import { readRange } from '../range-read.ts';
import type { Store, TransactionValue } from '../store.ts';
import type { EventDraft, StoredEvent } from './event.ts';

/**
 * An event as stored: its data as JSON text, written once (`json`), or, for an event that reports
 * an audit entry, that entry's number (`auditSeq`). Events stored before the text was kept carry
 * their data as a value (`data`).
 */
interface EventRecord {
  cursor: number;
  id: string;
  time: string;
  kind: StoredEvent['kind'];
  topic: string;
  env: StoredEvent['env'];
  json?: string;
  auditSeq?: number;
  data?: unknown;
}

/**
 * The topic every audit entry's event is published under. It is not indexed by topic: it holds
 * every entry of its environment, the audit log's own trace index answers for one decision, and
 * an index entry per call would cost each request one more write.
 */
const UNINDEXED_TOPIC = 'audit';

/**
 * The durable event log: every event, numbered by a cursor that increases by one per event
 * across the whole store. Events are appended inside the transaction that commits what they
 * describe (a decision and its audit entry, say), so an event exists exactly when its cause does.
 * The tail is read inside the write transaction, as the audit log does, so writers in other
 * processes (the CLI) number correctly behind the server.
 *
 * Readers (the stream, the webhook fan-out) read the log itself; `announce` tells them after a
 * commit that there is something new to read. A per-topic index, kept in the same transactions,
 * answers "what happened to this decision" without reading the log.
 */
export interface RetentionPolicy {
  /** Events older than this are pruned. */
  maxAgeMs: number;
  /** At most this many events are kept. */
  maxCount: number;
}

/** A week of events, at most a million. */
export const DEFAULT_RETENTION: RetentionPolicy = { maxAgeMs: 7 * 24 * 60 * 60 * 1000, maxCount: 1_000_000 };

const PRUNED_THROUGH = 'events-pruned-through';
/** The last cursor handed out, rewritten with every batch that appends (see `EventLog.headValue`). */
const HEAD = 'events-head';
/** One prune removes at most this many events, so its transaction stays short; the next run goes on. */
const PRUNE_BATCH = 10_000;

export class EventLog {
  private readonly events: Database<EventRecord, number>;
  /** `[env, topic, cursor]` → true. */
  private readonly byTopic: Database<true, [string, string, number]>;
  private readonly meta: Database<number, string>;
  private readonly listeners: Array<() => void> = [];
  /** An announcement is queued and has not yet told the listeners. */
  private announced = false;
  /** The head, read and written once per write transaction however many events it appends. */
  private readonly headValue: TransactionValue<number>;

  constructor(
    private readonly store: Store,
    /** Where events that report an audit entry (`auditSeq`) read it from. */
    private readonly audit: Pick<AuditLog, 'entry'>,
  ) {
    this.events = store.database<EventRecord, number>('events');
    this.byTopic = store.database<true, [string, string, number]>('events-by-topic');
    this.meta = store.database<number, string>('meta');
    this.headValue = store.transactionValue(() => this.storedHead(), (cursor) => this.meta.put(HEAD, cursor));
  }

  /** Numbers and stores one event; call inside `store.commit`, with the writes it describes. */
  appendInTransaction(draft: EventDraft): void {
    const cursor = this.headValue.get() + 1;
    const event: EventRecord = { cursor, id: sortableId('evt_'), time: new Date().toISOString(), kind: draft.kind, topic: draft.topic, env: draft.env };
    if (draft.auditSeq !== undefined) event.auditSeq = draft.auditSeq;
    else event.json = draft.dataJson ?? JSON.stringify(draft.data);
    this.events.put(cursor, event);
    this.headValue.set(cursor);
    if (draft.topic !== UNINDEXED_TOPIC) this.byTopic.put([draft.env, draft.topic, cursor], true);
  }

  /** The retained events of one topic in one environment, oldest first. */
  ofTopic(env: string, topic: string): StoredEvent[] {
    const out: StoredEvent[] = [];
    for (const [, , cursor] of readRange(this.byTopic.getKeys({ start: [env, topic, 0], end: [env, topic, Number.MAX_SAFE_INTEGER] }))) {
      const event = this.events.get(cursor);
      if (event) out.push(this.readable(event));
    }
    return out;
  }

  /** The cursor of the last event (0 when the log has never held one), this transaction's appends included. */
  head(): number {
    return this.headValue.get();
  }

  private storedHead(): number {
    const recorded = this.meta.get(HEAD);
    if (recorded !== undefined) return recorded;
    // A log written before the head was recorded: find it once.
    for (const key of this.events.getKeys({ reverse: true, limit: 1 })) return key;
    return this.meta.get(PRUNED_THROUGH) ?? 0;
  }

  /** Up to `limit` events with a cursor above `cursor`, in order. */
  after(cursor: number, limit: number): StoredEvent[] {
    const out: StoredEvent[] = [];
    for (const { value } of this.events.getRange({ start: cursor + 1, limit })) out.push(this.readable(value));
    return out;
  }

  /** The event as readers see it: one that reports an audit entry carries the entry as its data. */
  private readable(record: EventRecord): StoredEvent {
    const { cursor, id, time, kind, topic, env } = record;
    const data = record.json ?? JSON.stringify(record.auditSeq === undefined ? record.data : (this.audit.entry(record.auditSeq) ?? null)) ?? 'null';
    return { cursor, id, time, kind, topic, env, dataJson: data };
  }

  /** Events up to this cursor have been pruned: a reader behind it has missed some. */
  prunedThrough(): number {
    return this.meta.get(PRUNED_THROUGH) ?? 0;
  }

  /**
   * Drops events past the retention policy, never above `floor` (the webhook fan-out's
   * position: an event not yet fanned out must stay). Resolves to the number dropped.
   */
  async prune(policy: RetentionPolicy, floor: number, now = Date.now()): Promise<number> {
    const head = this.head();
    const byCount = head - policy.maxCount;
    const cutoff = new Date(now - policy.maxAgeMs).toISOString();
    let through = this.prunedThrough();
    for (const { key, value } of this.events.getRange({ start: through + 1 })) {
      if (key > floor || key - this.prunedThrough() > PRUNE_BATCH || (key > byCount && value.time >= cutoff)) break;
      through = key;
    }
    const from = this.prunedThrough();
    if (through === from) return 0;
    await this.store.commit(() => {
      for (const { key, value } of this.events.getRange({ start: from + 1, end: through + 1 })) {
        this.events.remove(key);
        this.byTopic.remove([value.env, value.topic, key]);
      }
      this.meta.put(PRUNED_THROUGH, through);
    });
    return through - from;
  }

  /**
   * A reader that pushes events as they are committed (the stream, while it has subscribers) is
   * on (`true`) or gone (`false`): in `--threads` mode this thread is then woken by the other
   * threads' commits too (core/store.ts, `followThreads`).
   */
  follow(on: boolean): void {
    this.store.followThreads(on);
  }

  /** Calls `listener` after `announce` is called: after a commit that appended events. */
  onCommitted(listener: () => void): void {
    this.listeners.push(listener);
  }

  /**
   * Tells the readers that committed events may be waiting. The requests of one batch all
   * announce as their commit resolves; the readers are told once, when the microtasks queued by
   * then have run, and read whatever all of them committed (each told per request cost a read
   * of the log's head and of the webhook endpoints per call).
   */
  announce(): void {
    if (this.announced) return;
    this.announced = true;
    queueMicrotask(() => {
      this.announced = false;
      for (const listener of this.listeners) {
        // A reader's failure is its own (logged); thrown here it would end the process.
        try {
          listener();
        } catch (error) {
          log.error({ err: error }, 'an event log reader failed on an announcement');
        }
      }
    });
  }
}
