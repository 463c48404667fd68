import type { Database } from 'lmdb';
import { inChunks } from './chunked-scan.ts';
import type { DecisionRecord } from './decision.ts';
import type { Env } from './env.ts';
import { GatehouseError } from './errors.ts';
import type { Store, TransactionValue } from './store.ts';

/**
 * Decisions keyed by [env, id]. Ids sort by creation time, so a range scan within one env lists
 * decisions oldest (or, reversed, newest) first in an order that never changes, and a cursor is
 * just the last id seen and the direction it was seen in.
 *
 * Beside them, how many decisions of an env are in each state (status, gate, next action,
 * policy), kept in the transactions that write the decisions: counts read those tallies instead
 * of every decision (a full read held the server for 330-470 ms at 100,000 decisions), and they
 * replicate with the writes in cluster mode.
 */
export type DecisionOrder = 'asc' | 'desc';

/** What a list or a count selects: exact matches, and `q` a case-insensitive substring of the title. */
export interface DecisionSelection {
  status?: string;
  policy?: string;
  gate?: string;
  nextAction?: string;
  q?: string;
}

export interface DecisionFilter extends DecisionSelection {
  limit: number;
  cursor?: string;
  order?: DecisionOrder;
}

export interface DecisionPage {
  data: DecisionRecord[];
  nextCursor: string | null;
}

/** The fields a selection filters on exactly, which counts break down by. */
const FACETS = ['status', 'gate', 'nextAction', 'policy'] as const;
type Facet = (typeof FACETS)[number];
type FacetValues = Pick<DecisionRecord, Facet>;

/** A tally's key: the env and the facets' values, in FACETS order. */
type TallyKey = [Env, string, string, string, string];

/**
 * A list reads at most this many decisions for one page (about 15 ms): a selection that few
 * decisions match ends its page early, with a cursor to go on from, rather than holding every
 * other request while it reads the whole env.
 */
export const LIST_SCAN_LIMIT = 5_000;


/**
 * How many decisions a selection lists (`total`), and for each facet how many each of its values
 * would list with the selection's other filters kept: what choosing that value would show.
 */
export interface DecisionCounts {
  total: number;
  status: Record<string, number>;
  gate: Record<string, number>;
  nextAction: Record<string, number>;
  policy: Record<string, number>;
}

export function encodeCursor(lastId: string, order: DecisionOrder = 'asc'): string {
  return Buffer.from(JSON.stringify(order === 'asc' ? { after: lastId } : { before: lastId })).toString('base64url');
}

export function decodeCursor(cursor: string, order: DecisionOrder = 'asc'): string {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { after?: unknown; before?: unknown };
    const last = order === 'asc' ? parsed.after : parsed.before;
    if (typeof last === 'string' && last.startsWith('dec_')) return last;
  } catch {
    // fall through: any undecodable cursor is the caller's mistake, reported below
  }
  throw new GatehouseError('invalid_request', `cursor is not one this API returned for order=${order}`);
}

/** Which of the selection's exact filters `values` fails: `none`, the one facet it fails, or `several`. */
function failedFacet(values: FacetValues, selection: DecisionSelection): Facet | 'none' | 'several' {
  let failed: Facet | 'none' | 'several' = 'none';
  for (const facet of FACETS) {
    const wanted = selection[facet];
    if (wanted && values[facet] !== wanted) {
      if (failed !== 'none') return 'several';
      failed = facet;
    }
  }
  return failed;
}

/** Whether `record` is listed by `selection` (`needle`: its `q`, lower-cased). */
function selects(record: DecisionRecord, selection: DecisionSelection, needle: string | null): boolean {
  return (needle === null || record.title.toLowerCase().includes(needle)) && failedFacet(record, selection) === 'none';
}

/** Adds `n` decisions in state `values` to `counts` (see DecisionCounts). */
function addCounts(counts: DecisionCounts, values: FacetValues, selection: DecisionSelection, n: number): void {
  const failed = failedFacet(values, selection);
  if (failed === 'several') return;
  if (failed === 'none') counts.total += n;
  for (const facet of FACETS) {
    if (failed !== 'none' && failed !== facet) continue;
    const tally = counts[facet];
    tally[values[facet]] = (tally[values[facet]] ?? 0) + n;
  }
}

function tallyKey(record: DecisionRecord): TallyKey {
  return [record.env, record.status, record.gate, record.nextAction, record.policy];
}

/** Where decisions are stored: in `--threads` mode thread 0 learns the other threads' writes to it (core/memory/decision-memory.ts). */
export const DECISIONS_DATABASE = 'decisions';

export class DecisionStore {
  private readonly db: Database<DecisionRecord, [Env, string]>;
  private readonly tallies: Database<number, TallyKey>;
  /** Each tally as a transaction value: a batch of creations reads and writes it once. */
  private readonly tallyValues = new Map<string, TransactionValue<number>>();

  constructor(private readonly store: Store) {
    this.db = store.database<DecisionRecord, [Env, string]>(DECISIONS_DATABASE);
    this.tallies = store.database<number, TallyKey>('decision-tallies');
    this.tallyEarlierDecisions(store);
  }

  get(env: Env, id: string): DecisionRecord | undefined {
    return this.db.get([env, id]);
  }

  /** Stores a decision and moves it to its state's tally; call inside `store.commit`. */
  write(record: DecisionRecord): void {
    const key: [Env, string] = [record.env, record.id];
    // A creation finds nothing (no value to decode); a transition reads the record it replaces.
    const previous = this.db.get(key);
    this.db.put(key, record);
    const before = previous && tallyKey(previous);
    const after = tallyKey(record);
    if (before && before.every((value, i) => value === after[i])) return;
    if (before) this.adjustTally(before, -1);
    this.adjustTally(after, 1);
  }

  private adjustTally(key: TallyKey, delta: number): void {
    const id = key.join('\0');
    let tally = this.tallyValues.get(id);
    if (!tally) {
      tally = this.store.transactionValue(
        () => this.tallies.get(key) ?? 0,
        (n) => (n > 0 ? this.tallies.put(key, n) : this.tallies.remove(key)),
      );
      this.tallyValues.set(id, tally);
    }
    tally.set(tally.get() + delta);
  }

  /**
   * Data written before decisions were tallied: tallies them once, in one transaction. In
   * cluster mode the tallies arrive with the commits they were written in.
   */
  private tallyEarlierDecisions(store: Store): void {
    if (store.nodeId !== null) return;
    const untallied = () => this.tallies.getKeysCount({ limit: 1 }) === 0 && this.db.getKeysCount({ limit: 1 }) > 0;
    if (!untallied()) return;
    store.root.transactionSync(() => {
      // Another process may have tallied them meanwhile.
      if (!untallied()) return;
      const counted = new Map<string, { key: TallyKey; n: number }>();
      for (const { value } of this.db.getRange()) {
        const key = tallyKey(value);
        const id = JSON.stringify(key);
        const entry = counted.get(id) ?? counted.set(id, { key, n: 0 }).get(id)!;
        entry.n++;
      }
      for (const { key, n } of counted.values()) this.tallies.put(key, n);
    });
  }

  /**
   * A page of what `filter` selects. A page reads at most LIST_SCAN_LIMIT decisions: when few
   * match, it may hold fewer than `limit` (even none) and still have a `nextCursor`.
   */
  list(env: Env, filter: DecisionFilter): DecisionPage {
    const order = filter.order ?? 'asc';
    const last = filter.cursor === undefined ? undefined : decodeCursor(filter.cursor, order);
    // '\uffff' sorts after every id, closing the range at the end of this env's keys.
    const range =
      order === 'asc'
        ? this.db.getRange({ start: [env, last ?? ''], end: [env, '\uffff'] })
        : this.db.getRange({ start: [env, last ?? '\uffff'], end: [env, ''], reverse: true });
    const needle = filter.q ? filter.q.toLowerCase() : null;
    const data: DecisionRecord[] = [];
    let more = false;
    let scanned = 0;
    let lastScanned: string | null = null;
    for (const { value } of range) {
      if (last !== undefined && value.id === last) continue;
      if (scanned === LIST_SCAN_LIMIT) {
        more = true;
        break;
      }
      scanned++;
      lastScanned = value.id;
      if (!selects(value, filter, needle)) continue;
      if (data.length === filter.limit) {
        more = true;
        break;
      }
      data.push(value);
    }
    const resumeAt = scanned === LIST_SCAN_LIMIT ? lastScanned : (data.at(-1)?.id ?? null);
    return { data, nextCursor: more && resumeAt ? encodeCursor(resumeAt, order) : null };
  }

  /**
   * Counts what `selection` lists in `env`, and what each facet's values would (see
   * DecisionCounts). Without `q` it reads only the tallies; a title (`q`) is matched by reading
   * the env's decisions, a chunk per event-loop turn.
   */
  async counts(env: Env, selection: DecisionSelection): Promise<DecisionCounts> {
    const counts: DecisionCounts = { total: 0, status: {}, gate: {}, nextAction: {}, policy: {} };
    if (!selection.q) {
      for (const { key, value } of this.tallies.getRange({ start: [env], end: [env, '\uffff'] })) {
        const [, status, gate, nextAction, policy] = key;
        addCounts(counts, { status, gate, nextAction, policy } as FacetValues, selection, value);
      }
      return counts;
    }
    const needle = selection.q.toLowerCase();
    for await (const entries of inChunks(this.db, { start: [env, ''], end: [env, '\uffff'] })) {
      for (const { value } of entries) if (value.title.toLowerCase().includes(needle)) addCounts(counts, value, selection, 1);
    }
    return counts;
  }
}
