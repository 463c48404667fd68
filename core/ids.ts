import { randomBytes } from 'node:crypto';

/**
 * Identifiers that sort by creation time: a base36 millisecond clock, a per-millisecond counter
 * and random bits. Listings page through records in id order, so this order is the one callers
 * see, stable across restarts.
 */
let lastMs = 0;
let counter = 0;

export function sortableId(prefix: string): string {
  // The clock may step back (NTP); never let ids go backwards with it.
  const now = Math.max(Date.now(), lastMs);
  if (now === lastMs) counter++;
  else {
    lastMs = now;
    counter = 0;
  }
  return `${prefix}${now.toString(36).padStart(9, '0')}${counter.toString(36).padStart(4, '0')}${randomBytes(5).toString('hex')}`;
}

/** The part of an id after its prefix, shared by a decision and its trace reference. */
export function idSuffix(id: string): string {
  return id.slice(id.indexOf('_') + 1);
}

export function requestId(): string {
  return `req_${randomBytes(12).toString('hex')}`;
}
