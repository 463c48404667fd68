/**
 * OPA's `uuid.parse` (Google's `uuid.Parse` and the fields OPA reads from the result) and the
 * version 4 UUIDs of `uuid.rfc4122`.
 */
import { randomUUID } from 'node:crypto';

/** Offset of the Unix epoch from the Gregorian one of UUID times, in 100 ns units. */
const GREGORIAN_TO_UNIX = 122_192_928_000_000_000n;

const HEX_PAIR = /^[0-9a-fA-F]{2}$/;

/**
 * Google's `uuid.Parse`: 36 characters with dashes, the same behind `urn:uuid:` (any case) or
 * between two characters it does not look at (`{…}`), or 32 hexadecimal digits. Lengths are in
 * UTF-8 bytes, as Go's are.
 */
function parseBytes(s: string): Uint8Array | undefined {
  let text = s;
  const bytes = Buffer.byteLength(s);
  if (bytes === 36 + 9) {
    if (s.slice(0, 9).toLowerCase() !== 'urn:uuid:') return undefined;
    text = s.slice(9);
  } else if (bytes === 36 + 2) {
    // Go slices bytes: a multi-byte first character leaves a text that cannot be hexadecimal.
    if (s.codePointAt(0)! > 0x7f) return undefined;
    text = s.slice(1, 37);
  } else if (bytes === 32) {
    return hexBytes(s, [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30]);
  } else if (bytes !== 36) {
    return undefined;
  }
  if (text[8] !== '-' || text[13] !== '-' || text[18] !== '-' || text[23] !== '-') return undefined;
  return hexBytes(text, [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34]);
}

function hexBytes(text: string, offsets: number[]): Uint8Array | undefined {
  const out = new Uint8Array(16);
  for (const [i, at] of offsets.entries()) {
    const pair = text.slice(at, at + 2);
    if (!HEX_PAIR.test(pair)) return undefined;
    out[i] = parseInt(pair, 16);
  }
  return out;
}

function variant(b: number): string {
  if ((b & 0xc0) === 0x80) return 'RFC4122';
  if ((b & 0xe0) === 0xc0) return 'Microsoft';
  if ((b & 0xe0) === 0xe0) return 'Future';
  return 'Reserved';
}

/** What the first byte of a MAC address says of it (RFC 7042, 2.1). */
function macVariables(b: number): string {
  if ((b & 0b11) === 0b11) return 'local:multicast';
  if ((b & 0b01) === 0b01) return 'global:multicast';
  if ((b & 0b10) === 0b10) return 'local:unicast';
  return 'global:unicast';
}

const DOMAINS = ['Person', 'Group', 'Org'];

/**
 * `uuid.parse(s)`: `version` and `variant`, and for versions 1 and 2 the time (Unix ns, as Go's
 * int64 arithmetic gives it), node id, what the node id says and the clock sequence; version 2
 * adds the local `id` and its `domain`. The object as JSON text, since the time can exceed the
 * integers JavaScript holds exactly; undefined for text that is not a UUID.
 */
export function uuidParse(s: string): string | undefined {
  const u = parseBytes(s);
  if (!u) return undefined;
  const version = u[6]! >> 4;
  const fields: Record<string, string | number | bigint> = { version, variant: variant(u[8]!) };
  if (version === 1 || version === 2) {
    const view = new DataView(u.buffer);
    const time =
      BigInt(view.getUint32(0)) | (BigInt(view.getUint16(4)) << 32n) | (BigInt(view.getUint16(6) & 0xfff) << 48n);
    fields.time = BigInt.asIntN(64, (time - GREGORIAN_TO_UNIX) * 100n);
    fields.nodeid = Array.from(u.subarray(10), (b) => b.toString(16).padStart(2, '0')).join('-');
    fields.macvariables = macVariables(u[10]!);
    fields.clocksequence = view.getUint16(8) & 0x3fff;
    if (version === 2) {
      fields.id = view.getUint32(0);
      fields.domain = DOMAINS[u[9]!] ?? `Domain${u[9]}`;
    }
  }
  const members = Object.keys(fields)
    .sort()
    .map((k) => {
      const v = fields[k]!;
      return `${JSON.stringify(k)}:${typeof v === 'string' ? JSON.stringify(v) : v.toString()}`;
    });
  return `{${members.join(',')}}`;
}

/** A random version 4 UUID in lower-case hex, as OPA's `uuid.New`. */
export function newUuid(): string {
  return randomUUID();
}
