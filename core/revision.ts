import { GatehouseError } from './errors.ts';

/**
 * Optimistic concurrency for records that are read, changed and written back (decisions, keys,
 * signing keys, webhook endpoints). A request reads a record outside the write transaction (the
 * policy needs it before anything is written), so two requests may both start from the same
 * version. Each changed copy carries the revision after the one it was read at; inside the
 * committing transaction, before the request writes anything, the stored record must still be at
 * the revision just before it, or the request is refused with 409 `conflict` and the winner's
 * write stands.
 *
 * Records written before revisions existed have none: they count as revision 0.
 */
export interface Revisioned {
  revision?: number;
}

/** The revision a changed copy of `read` carries. */
export function nextRevision(read: Revisioned): number {
  return (read.revision ?? 0) + 1;
}

/**
 * Throws 409 `conflict` unless `next` directly follows `stored`: nobody changed the record since
 * `next` was derived from it. Call inside the write transaction, before the request writes
 * anything, so the refusal leaves the batch untouched.
 */
export function assertFollows(stored: Revisioned | undefined, next: Revisioned, what: string): void {
  if (stored === undefined) throw new GatehouseError('conflict', `${what} was removed by another request; nothing was changed`);
  const storedRevision = stored.revision ?? 0;
  if (storedRevision !== (next.revision ?? 0) - 1) {
    throw new GatehouseError('conflict', `${what} was changed by another request since it was read (now at revision ${storedRevision}); read it again and retry`, {
      revision: storedRevision,
    });
  }
}
