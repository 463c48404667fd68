import { GatehouseError } from '../errors.ts';

/**
 * Keyset pagination for impact traces. A trace is computed whole and sorted by a string key
 * that never changes for a given step (its time, kind and own number; a decision's sortable
 * id); a cursor is the key of the last item of the previous page. Steps recorded later (a
 * webhook retry, another approval) sort after the keys already handed out or slot in by their
 * own key, so paging never repeats or skips an item that was there when the page was read.
 */
export interface PageRequest {
  limit: number;
  cursor?: string;
}

export interface Page<T> {
  data: T[];
  /** Pass as `cursor` for the next page; null on the last. */
  nextCursor: string | null;
}

export const PAGE_LIMITS = { defaultLimit: 100, maxLimit: 500 };

/** The page of `items` (sorted by `key`, ascending) after `request.cursor`. */
export function pageByKey<T>(items: readonly T[], key: (item: T) => string, request: PageRequest): Page<T> {
  const after = request.cursor === undefined ? undefined : decodeCursor(request.cursor);
  const rest = after === undefined ? items : items.filter((item) => key(item) > after);
  const data = rest.slice(0, request.limit);
  const more = rest.length > request.limit;
  return { data, nextCursor: more ? encodeCursor(key(data.at(-1)!)) : null };
}

function encodeCursor(key: string): string {
  return Buffer.from(JSON.stringify({ after: key })).toString('base64url');
}

function decodeCursor(cursor: string): string {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { after?: unknown };
    if (typeof parsed.after === 'string') return parsed.after;
  } catch {
    // fall through: an undecodable cursor is the caller's mistake, reported below
  }
  throw new GatehouseError('invalid_request', 'cursor is not one this endpoint returned');
}
