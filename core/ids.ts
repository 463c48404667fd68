import { randomBytes } from 'node:crypto';

/**
 * Identifiers that sort by creation time: a base36 millisecond clock, a per-millisecond counter
 * and random bits. Listings page through records in id order, so this order is the one callers
 * see, stable across restarts.
 */
let lastMs = 0;
let counter = 0;

/**
 * Random bits for ids, drawn from a pooled buffer: a call into the CSPRNG per id cost more than
 * the rest of making it. Ids are identifiers, never secrets (secrets use `randomBytes` directly).
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolOffset = 0;

export function randomHex(bytes: number): string {
  if (poolOffset + bytes > pool.length) {
    pool = randomBytes(POOL_BYTES);
    poolOffset = 0;
  }
  poolOffset += bytes;
  return pool.toString('hex', poolOffset - bytes, poolOffset);
}

export function sortableId(prefix: string): string {
  // The clock may step back (NTP); never let ids go backwards with it.
  const now = Math.max(Date.now(), lastMs);
  if (now === lastMs) counter++;
  else {
    lastMs = now;
    counter = 0;
  }
  return `${prefix}${now.toString(36).padStart(9, '0')}${counter.toString(36).padStart(4, '0')}${randomHex(5)}`;
}

/** The part of an id after its prefix, shared by a decision and its trace reference. */
export function idSuffix(id: string): string {
  return id.slice(id.indexOf('_') + 1);
}

export function requestId(): string {
  return `req_${randomHex(12)}`;
}
