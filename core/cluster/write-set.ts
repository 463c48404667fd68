import { Packr } from 'msgpackr';
import type { Key } from 'lmdb';

/**
 * What a commit wrote, as a list of puts and removes by database name: the unit cluster mode
 * replicates. Every instance applies the same write sets in the stream's order, so its LMDB
 * copy holds what every other holds at the same sequence.
 *
 * A value is encoded when it is written, not when the set is sent: a caller may go on changing
 * an object it has stored, and the copy must be what LMDB stored.
 */
export type WriteOp = [database: string, key: Key, value: Uint8Array] | [database: string, key: Key];

export interface CommitMessage {
  /** The instance that committed it. */
  node: string;
  ops: WriteOp[];
}

// Plain msgpack, without lmdb-js's shared structures: every reader decodes every message alone.
const packr = new Packr({ useRecords: false, moreTypes: false });

export function encodeValue(value: unknown): Uint8Array {
  return packr.pack(value);
}

export function decodeValue(bytes: Uint8Array): unknown {
  return packr.unpack(bytes);
}

export function encodeCommit(message: CommitMessage): Uint8Array {
  return packr.pack(message);
}

/** Decodes a message from the stream; one that is not a commit is an error naming why. */
export function decodeCommit(bytes: Uint8Array): CommitMessage {
  const message = packr.unpack(bytes) as Partial<CommitMessage> | null;
  if (!message || typeof message !== 'object' || typeof message.node !== 'string' || !Array.isArray(message.ops)) {
    throw new Error('not a commit message');
  }
  for (const op of message.ops) {
    if (!Array.isArray(op) || typeof op[0] !== 'string' || (op.length === 3 && !(op[2] instanceof Uint8Array)) || op.length < 2 || op.length > 3) {
      throw new Error('a commit message holds a malformed write');
    }
  }
  return message as CommitMessage;
}
