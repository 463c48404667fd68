/** `uuid.rfc4122`'s UUIDs: the one builtin of the family that needs the host, for randomness. */
import { randomUUID } from 'node:crypto';

/** A random version 4 UUID in lower-case hex, as OPA's `uuid.New`. */
export function newUuid(): string {
  return randomUUID();
}
