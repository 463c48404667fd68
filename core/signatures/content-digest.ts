import { createHash } from 'node:crypto';
import { parseDictionary, serializeDictionary } from 'structured-headers';
import { SignatureFailure } from './failure.ts';

/**
 * RFC 9530 `Content-Digest`: a structured dictionary of digest algorithm → byte sequence over the
 * message content. Gatehouse checks sha-256 and sha-512 (the two the RFC registers as active)
 * against the body it actually received; other algorithms in the field are ignored, but at least
 * one supported one must be there.
 */
export const DIGEST_ALGORITHMS = { 'sha-256': 'sha256', 'sha-512': 'sha512' } as const;
export type DigestAlgorithm = keyof typeof DIGEST_ALGORITHMS;

/** The field value for `body`, e.g. `sha-256=:X48E9q…=:`. */
export function contentDigest(body: Uint8Array, alg: DigestAlgorithm = 'sha-256'): string {
  const value = createHash(DIGEST_ALGORITHMS[alg]).update(body).digest();
  return serializeDictionary(new Map([[alg, [value, new Map()]]]));
}

/** Throws a `digest` failure unless every supported digest in `header` matches `body`. */
export function checkContentDigest(header: string | undefined, body: Uint8Array): void {
  if (header === undefined) throw new SignatureFailure('digest', 'the request has a body but no Content-Digest');
  let entries;
  try {
    entries = parseDictionary(header);
  } catch (error) {
    throw new SignatureFailure('digest', `Content-Digest is not a structured dictionary: ${(error as Error).message}`);
  }
  let checked = 0;
  for (const [name, member] of entries) {
    if (!(name in DIGEST_ALGORITHMS)) continue;
    const value = member[0];
    if (!(value instanceof ArrayBuffer)) throw new SignatureFailure('digest', `Content-Digest ${name} is not a byte sequence`);
    const actual = createHash(DIGEST_ALGORITHMS[name as DigestAlgorithm]).update(body).digest();
    if (!actual.equals(Buffer.from(value))) throw new SignatureFailure('digest', `Content-Digest ${name} does not match the body received`);
    checked++;
  }
  if (checked === 0) throw new SignatureFailure('digest', 'Content-Digest has neither sha-256 nor sha-512');
}
