// uuid.parse: Google's `uuid.Parse` and the fields OPA reads from its result. (uuid.rfc4122 needs
// randomness and stays on the host.)

import { Value, UNDEFINED, isString, stringData, stringLength, parseJSON } from "../value";
import { output } from "./text-buffer";

/** The 16 bytes of the UUID last parsed. */
const UUID = memory.data(16, 8);

/** Where the 16 hex pairs are in the 36-character form with dashes. */
const DASHED_PAIRS = memory.data<u8>([0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34]);

/** `urn:uuid:`, which the 45-byte form starts with in any case. */
const URN_PREFIX = memory.data<u8>([0x75, 0x72, 0x6e, 0x3a, 0x75, 0x75, 0x69, 0x64, 0x3a]);

/** Offset of the Unix epoch from the Gregorian one of UUID times, in 100 ns units. */
// @ts-ignore: decorator
@inline const GREGORIAN_TO_UNIX: i64 = 122_192_928_000_000_000;

/** The value of a hexadecimal digit of either case, or -1. */
export function hexDigitValue(c: i32): i32 {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  c |= 0x20;
  return c >= 0x61 && c <= 0x66 ? c - 0x61 + 10 : -1;
}

/**
 * Parses into UUID as Google's `uuid.Parse` does: 36 characters with dashes, the same behind
 * `urn:uuid:` (any case) or between two bytes it does not look at (`{…}`), or 32 hexadecimal
 * digits. Lengths are in bytes, as Go's are.
 */
function parseUuid(data: usize, len: i32): bool {
  let p = data;
  let dashed = true;
  if (len == 45) {
    for (let i = 0; i < 9; i++) {
      let c = load<u8>(data + <usize>i);
      if (c >= 0x41 && c <= 0x5a) c |= 0x20;
      if (c != load<u8>(URN_PREFIX + <usize>i)) return false;
    }
    p += 9;
  } else if (len == 38) {
    // Go slices bytes: a multi-byte first character leaves a text that cannot be hexadecimal.
    if (load<u8>(data) > 0x7f) return false;
    p += 1;
  } else if (len == 32) {
    dashed = false;
  } else if (len != 36) {
    return false;
  }
  if (dashed && (load<u8>(p, 8) != 0x2d || load<u8>(p, 13) != 0x2d || load<u8>(p, 18) != 0x2d || load<u8>(p, 23) != 0x2d)) {
    return false;
  }
  for (let i = 0; i < 16; i++) {
    const at = p + <usize>(dashed ? load<u8>(DASHED_PAIRS + <usize>i) : i << 1);
    const high = hexDigitValue(load<u8>(at));
    const low = hexDigitValue(load<u8>(at, 1));
    if (high < 0 || low < 0) return false;
    store<u8>(UUID + <usize>i, <u8>((high << 4) | low));
  }
  return true;
}

// @ts-ignore: decorator
@inline
function byteAt(i: i32): u32 {
  return load<u8>(UUID + <usize>i);
}

/** The big-endian 16-bit word at byte i. */
function word16(i: i32): u32 {
  return (byteAt(i) << 8) | byteAt(i + 1);
}

function appendVariant(): void {
  const b = byteAt(8);
  if ((b & 0xc0) == 0x80) output.ascii("RFC4122");
  else if ((b & 0xe0) == 0xc0) output.ascii("Microsoft");
  else if ((b & 0xe0) == 0xe0) output.ascii("Future");
  else output.ascii("Reserved");
}

/** What the first byte of a MAC address says of it (RFC 7042, 2.1). */
function appendMacVariables(): void {
  const b = byteAt(10);
  if ((b & 3) == 3) output.ascii("local:multicast");
  else if ((b & 1) == 1) output.ascii("global:multicast");
  else if ((b & 2) == 2) output.ascii("local:unicast");
  else output.ascii("global:unicast");
}

function appendDomain(): void {
  const d = byteAt(9);
  if (d == 0) output.ascii("Person");
  else if (d == 1) output.ascii("Group");
  else if (d == 2) output.ascii("Org");
  else {
    output.ascii("Domain");
    output.decimal(d);
  }
}

/**
 * `uuid.parse(s)`: `version` and `variant`, and for versions 1 and 2 the time (Unix ns, as Go's
 * int64 arithmetic gives it), node id, what the node id says and the clock sequence; version 2
 * adds the local `id` and its `domain`. Undefined for text that is not a UUID. The object is
 * written as JSON, keys in order, and parsed.
 */
export function bi_uuid_parse(s: Value): Value {
  if (!isString(s) || !parseUuid(stringData(s), stringLength(s))) return UNDEFINED;
  const version = byteAt(6) >> 4;
  const timed = version == 1 || version == 2;
  const first32 = (word16(0) << 16) | word16(2);
  output.begin();
  output.byte(0x7b);
  if (timed) {
    output.ascii("\"clocksequence\":");
    output.decimal(word16(8) & 0x3fff);
  }
  if (version == 2) {
    output.ascii(",\"domain\":\"");
    appendDomain();
    output.ascii("\",\"id\":");
    output.decimal(first32);
  }
  if (timed) {
    output.ascii(",\"macvariables\":\"");
    appendMacVariables();
    output.ascii("\",\"nodeid\":\"");
    for (let i = 10; i < 16; i++) {
      if (i > 10) output.byte(0x2d);
      output.hex(UUID + <usize>i, 1);
    }
    const time = <i64>first32 | (<i64>word16(4) << 32) | (<i64>(word16(6) & 0xfff) << 48);
    output.ascii("\",\"time\":");
    output.decimal((time - GREGORIAN_TO_UNIX) * 100);
    output.byte(0x2c);
  }
  output.ascii("\"variant\":\"");
  appendVariant();
  output.ascii("\",\"version\":");
  output.decimal(version);
  output.byte(0x7d);
  const text = output.toStringCopy();
  return parseJSON(stringData(text), stringLength(text));
}
