import { Type, type StringOptions } from '@sinclair/typebox';

/**
 * Every id the API names (`dec_…`, `key_…`, `mem_…`, a signing key's kid, a delivery cursor) is
 * far shorter than this. The bound keeps each one a valid LMDB key (at most 1,978 bytes; 128
 * characters are at most 384 bytes of UTF-8): an id too long for a key throws inside LMDB reads.
 */
export const ID_MAX_LENGTH = 128;

export function Id(options: StringOptions = {}) {
  return Type.String({ minLength: 1, maxLength: ID_MAX_LENGTH, ...options });
}

/** Each `{…}` of a route's path: an id, percent-decoded (proxy/stages/path-params.ts). */
export const PathParam = Id({ description: `An id, at most ${ID_MAX_LENGTH} characters once percent-decoded.` });
