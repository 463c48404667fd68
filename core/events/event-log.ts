import type { Database } from 'lmdb';
import type { AuditLog } from '../audit-log.ts';
import { sortableId } from '../ids.ts';
import { readRange } from '../range-read.ts';
import type { Store } from '../store.ts';
import type { EventDraft, StoredEvent } from './event.ts';

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
/** The last cursor handed out, rewritten with every append: one small read per append instead of a cursor. */
const HEAD = 'events-head';
/** One prune removes at most this many events, so its transaction stays short; the next run goes on. */
const PRUNE_BATCH = 10_000;

export class EventLog {
  private readonly events: Database<StoredEvent, number>;
  /** `[env, topic, cursor]` → true. */
  private readonly byTopic: Database<true, [string, string, number]>;
  private readonly meta: Database<number, string>;
  private readonly listeners: Array<() => void> = [];

  constructor(
    private readonly store: Store,
    /** Where events that report an audit entry (`auditSeq`) read it from. */
    private readonly audit: Pick<AuditLog, 'entry'>,
  ) {
    this.events = store.database<StoredEvent, number>('events');
    this.byTopic = store.database<true, [string, string, number]>('events-by-topic');
    this.meta = store.database<number, string>('meta');
  }

  /** Numbers and stores one event; call inside `store.commit`, with the writes it describes. */
  appendInTransaction(draft: EventDraft): StoredEvent {
    const event: StoredEvent = { cursor: this.head() + 1, id: sortableId('evt_'), time: new Date().toISOString(), kind: draft.kind, topic: draft.topic, env: draft.env, data: draft.data };
    if (draft.auditSeq !== undefined) event.auditSeq = draft.auditSeq;
    this.events.put(event.cursor, event);
    this.meta.put(HEAD, event.cursor);
    this.byTopic.put([event.env, event.topic, event.cursor], true);
    return event;
  }

  /** The retained events of one topic in one environment, oldest first. */
  ofTopic(env: string, topic: string): StoredEvent[] {
    const out: StoredEvent[] = [];
    for (const [, , cursor] of readRange(this.byTopic.getKeys({ start: [env, topic, 0], end: [env, topic, Number.MAX_SAFE_INTEGER] }))) {
      const event = this.events.get(cursor);
      if (event) out.push(this.withData(event));
    }
    return out;
  }

  /** The cursor of the last event (0 when the log has never held one). */
  head(): number {
    const recorded = this.meta.get(HEAD);
    if (recorded !== undefined) return recorded;
    // A log written before the head was recorded: find it once.
    for (const key of this.events.getKeys({ reverse: true, limit: 1 })) return key;
    return this.meta.get(PRUNED_THROUGH) ?? 0;
  }

  /** Up to `limit` events with a cursor above `cursor`, in order. */
  after(cursor: number, limit: number): StoredEvent[] {
    const out: StoredEvent[] = [];
    for (const { value } of this.events.getRange({ start: cursor + 1, limit })) out.push(this.withData(value));
    return out;
  }

  /** The event as readers see it: one that reports an audit entry carries the entry as its data. */
  private withData(event: StoredEvent): StoredEvent {
    if (event.auditSeq !== undefined) event.data = this.audit.entry(event.auditSeq) ?? null;
    return event;
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

  /** Calls `listener` whenever `announce` is called: after a commit that appended events. */
  onCommitted(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Tells the readers that committed events may be waiting. */
  announce(): void {
    for (const listener of this.listeners) listener();
  }
}
