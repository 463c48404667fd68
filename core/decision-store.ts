import type { Database } from 'lmdb';
import type { DecisionRecord } from './decision.ts';
import type { Env } from './env.ts';
import { GatehouseError } from './errors.ts';
import type { Store } from './store.ts';

/**
 * Decisions keyed by [env, id]. Ids sort by creation time, so a range scan within one env lists
 * decisions oldest first in an order that never changes, and a cursor is just the last id seen.
 */
export interface DecisionFilter {
  status?: string;
  policy?: string;
  gate?: string;
  limit: number;
  cursor?: string;
}

export interface DecisionPage {
  data: DecisionRecord[];
  nextCursor: string | null;
}

export function encodeCursor(lastId: string): string {
  return Buffer.from(JSON.stringify({ after: lastId })).toString('base64url');
}

export function decodeCursor(cursor: string): string {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { after?: unknown };
    if (typeof parsed.after === 'string' && parsed.after.startsWith('dec_')) return parsed.after;
  } catch {
    // fall through: any undecodable cursor is the caller's mistake, reported below
  }
  throw new GatehouseError('invalid_request', 'cursor is not one this API returned');
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
    const after = filter.cursor === undefined ? undefined : decodeCursor(filter.cursor);
    // '\uffff' sorts after every id, closing the range at the end of this env's keys.
    const range = this.db.getRange({ start: [env, after ?? ''], end: [env, '\uffff'] });
    const data: DecisionRecord[] = [];
    let more = false;
    for (const { value } of range) {
      if (after !== undefined && value.id === after) continue;
      if (filter.status && value.status !== filter.status) continue;
      if (filter.policy && value.policy !== filter.policy) continue;
      if (filter.gate && value.gate !== filter.gate) continue;
      if (data.length === filter.limit) {
        more = true;
        break;
      }
      data.push(value);
    }
    const last = data.at(-1);
    return { data, nextCursor: more && last ? encodeCursor(last.id) : null };
  }
}
