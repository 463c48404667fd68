import type { Database } from 'lmdb';
import type { DecisionRecord } from './decision.ts';
import type { Env } from './env.ts';
import { GatehouseError } from './errors.ts';
import type { Store } from './store.ts';

/**
 * Decisions keyed by [env, id]. Ids sort by creation time, so a range scan within one env lists
 * decisions oldest (or, reversed, newest) first in an order that never changes, and a cursor is
 * just the last id seen and the direction it was seen in.
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

/**
 * Which of the selection's filters `record` fails: `none`, the one facet it fails, or `several`
 * (a title that does not match `q` counts as several: no facet's choice would list it).
 */
function failedFacet(record: DecisionRecord, selection: DecisionSelection, needle: string | null): Facet | 'none' | 'several' {
  if (needle !== null && !record.title.toLowerCase().includes(needle)) return 'several';
  let failed: Facet | 'none' | 'several' = 'none';
  for (const facet of FACETS) {
    const wanted = selection[facet];
    if (wanted && record[facet] !== wanted) {
      if (failed !== 'none') return 'several';
      failed = facet;
    }
  }
  return failed;
}

export class DecisionStore {
  private readonly db: Database<DecisionRecord, [Env, string]>;

  constructor(store: Store) {
    this.db = store.database<DecisionRecord, [Env, string]>('decisions');
  }

  get(env: Env, id: string): DecisionRecord | undefined {
    return this.db.get([env, id]);
  }

  /** Stores a decision; call inside `store.commit`. */
  write(record: DecisionRecord): void {
    this.db.put([record.env, record.id], record);
  }

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
    for (const { value } of range) {
      if (last !== undefined && value.id === last) continue;
      if (failedFacet(value, filter, needle) !== 'none') continue;
      if (data.length === filter.limit) {
        more = true;
        break;
      }
      data.push(value);
    }
    const lastSeen = data.at(-1);
    return { data, nextCursor: more && lastSeen ? encodeCursor(lastSeen.id, order) : null };
  }

  /** Counts what `selection` lists in `env`, and what each facet's values would (see DecisionCounts). Reads every decision of the env. */
  counts(env: Env, selection: DecisionSelection): DecisionCounts {
    const counts: DecisionCounts = { total: 0, status: {}, gate: {}, nextAction: {}, policy: {} };
    const needle = selection.q ? selection.q.toLowerCase() : null;
    for (const { value } of this.db.getRange({ start: [env, ''], end: [env, '\uffff'] })) {
      const failed = failedFacet(value, selection, needle);
      if (failed === 'several') continue;
      if (failed === 'none') counts.total++;
      for (const facet of FACETS) {
        if (failed !== 'none' && failed !== facet) continue;
        const tally = counts[facet];
        tally[value[facet]] = (tally[value[facet]] ?? 0) + 1;
      }
    }
    return counts;
  }
}
