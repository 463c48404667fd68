// UTF-8 decoding and encoding over raw memory, with Go's `unicode/utf8` rules: a byte that does
// not start a valid, shortest-form sequence decodes as U+FFFD with length 1. Rego strings may
// carry such bytes (base64.decode can produce them), so every string builtin walks text through
// these functions to count code points exactly as OPA does.

import { alloc } from "../heap";

export const RUNE_ERROR: i32 = 0xfffd;
export const MAX_RUNE: i32 = 0x10ffff;

/** Byte length of the sequence read by the last `decodeRune` or `decodeLastRune` call. */
export let runeSize: i32 = 0;

// @ts-ignore: decorator
@inline
function isContinuation(b: u32): bool {
  return (b & 0xc0) == 0x80;
}

/** Decodes the code point starting at `p` (reading no further than `end`); sets `runeSize`. */
export function decodeRune(p: usize, end: usize): i32 {
  const b0 = <u32>load<u8>(p);
  if (b0 < 0x80) {
    runeSize = 1;
    return <i32>b0;
  }
  const avail = end - p;
  runeSize = 1;
  if (b0 < 0xc2 || b0 > 0xf4) return RUNE_ERROR;
  if (b0 < 0xe0) {
    if (avail < 2) return RUNE_ERROR;
    const b1 = <u32>load<u8>(p, 1);
    if (!isContinuation(b1)) return RUNE_ERROR;
    runeSize = 2;
    return <i32>(((b0 & 0x1f) << 6) | (b1 & 0x3f));
  }
  // The second byte's range depends on the first: this is what rules out overlong forms,
  // surrogates (ED A0..BF) and code points above U+10FFFF.
  let lo: u32 = 0x80;
  let hi: u32 = 0xbf;
  if (b0 == 0xe0) lo = 0xa0;
  else if (b0 == 0xed) hi = 0x9f;
  else if (b0 == 0xf0) lo = 0x90;
  else if (b0 == 0xf4) hi = 0x8f;
  if (avail < 2) return RUNE_ERROR;
  const b1 = <u32>load<u8>(p, 1);
  if (b1 < lo || b1 > hi) return RUNE_ERROR;
  if (avail < 3) return RUNE_ERROR;
  const b2 = <u32>load<u8>(p, 2);
  if (!isContinuation(b2)) return RUNE_ERROR;
  if (b0 < 0xf0) {
    runeSize = 3;
    return <i32>(((b0 & 0x0f) << 12) | ((b1 & 0x3f) << 6) | (b2 & 0x3f));
  }
  if (avail < 4) return RUNE_ERROR;
  const b3 = <u32>load<u8>(p, 3);
  if (!isContinuation(b3)) return RUNE_ERROR;
  runeSize = 4;
  return <i32>(((b0 & 0x07) << 18) | ((b1 & 0x3f) << 12) | ((b2 & 0x3f) << 6) | (b3 & 0x3f));
}

/** Decodes the code point that ends at `end` (not reading before `start`); sets `runeSize`. */
export function decodeLastRune(start: usize, end: usize): i32 {
  const last = <u32>load<u8>(end - 1);
  if (last < 0x80) {
    runeSize = 1;
    return <i32>last;
  }
  // Look back at most three bytes for a lead byte, so that runs of invalid bytes stay linear.
  let p = end - 1;
  const limit = end - start > 4 ? end - 4 : start;
  while (p > limit && isContinuation(<u32>load<u8>(p))) p--;
  const r = decodeRune(p, end);
  if (p + <usize>runeSize != end) {
    runeSize = 1;
    return RUNE_ERROR;
  }
  return r;
}

/** Writes `r` as UTF-8 at `dst`; invalid code points (surrogates, out of range) become U+FFFD. */
export function encodeRune(dst: usize, r: i32): i32 {
  if (r >= 0 && r < 0x80) {
    store<u8>(dst, <u8>r);
    return 1;
  }
  if (r >= 0 && r < 0x800) {
    store<u8>(dst, <u8>(0xc0 | (r >> 6)));
    store<u8>(dst, <u8>(0x80 | (r & 0x3f)), 1);
    return 2;
  }
  if (r < 0 || r > MAX_RUNE || (r >= 0xd800 && r <= 0xdfff)) r = RUNE_ERROR;
  if (r < 0x10000) {
    store<u8>(dst, <u8>(0xe0 | (r >> 12)));
    store<u8>(dst, <u8>(0x80 | ((r >> 6) & 0x3f)), 1);
    store<u8>(dst, <u8>(0x80 | (r & 0x3f)), 2);
    return 3;
  }
  store<u8>(dst, <u8>(0xf0 | (r >> 18)));
  store<u8>(dst, <u8>(0x80 | ((r >> 12) & 0x3f)), 1);
  store<u8>(dst, <u8>(0x80 | ((r >> 6) & 0x3f)), 2);
  store<u8>(dst, <u8>(0x80 | (r & 0x3f)), 3);
  return 4;
}

/** Number of code points, counting each invalid byte as one (Go's `utf8.RuneCount`). */
export function runeCount(p: usize, len: i32): i32 {
  const end = p + <usize>len;
  let n = 0;
  while (p < end) {
    if (load<u8>(p) < 0x80) {
      p++;
    } else {
      decodeRune(p, end);
      p += <usize>runeSize;
    }
    n++;
  }
  return n;
}

/** Byte offset of the code point with index `index`, or `len` when the text is shorter. */
export function byteOffsetOfRune(p: usize, len: i32, index: i32): i32 {
  const start = p;
  const end = p + <usize>len;
  while (index > 0 && p < end) {
    if (load<u8>(p) < 0x80) {
      p++;
    } else {
      decodeRune(p, end);
      p += <usize>runeSize;
    }
    index--;
  }
  return <i32>(p - start);
}

/** Byte length of the text the last `withReplacedInvalid` returned. */
export let replacedLength: i32 = 0;

/**
 * The text as Go's `[]rune(s)` reads it, in UTF-8 again: each byte that does not start a valid
 * sequence becomes U+FFFD (EF BF BD), so every code point keeps its index and a searched
 * `"\uFFFD"` finds an invalid byte, as it does in OPA's `indexof`. Valid text, nearly always, is
 * answered in place, with nothing copied; `replacedLength` gives the length either way.
 */
export function withReplacedInvalid(p: usize, len: i32): usize {
  const end = p + <usize>len;
  let invalid = 0;
  for (let q = p; q < end; q += <usize>runeSize) {
    runeSize = 1;
    if (load<u8>(q) >= 0x80 && decodeRune(q, end) == RUNE_ERROR && runeSize == 1) invalid++;
  }
  replacedLength = len + 2 * invalid;
  if (invalid == 0) return p;
  const out = alloc(<usize>replacedLength);
  let w = out;
  for (let q = p; q < end; q += <usize>runeSize) {
    runeSize = 1;
    const b = load<u8>(q);
    if (b < 0x80) {
      store<u8>(w++, b);
      continue;
    }
    const r = decodeRune(q, end);
    if (r == RUNE_ERROR && runeSize == 1) {
      w += <usize>encodeRune(w, RUNE_ERROR);
    } else {
      memory.copy(w, q, <usize>runeSize);
      w += <usize>runeSize;
    }
  }
  return out;
}

/** Go's `unicode.IsSpace`: the Unicode White_Space property. */
export function isSpace(r: i32): bool {
  if (r <= 0xff) {
    return r == 0x20 || (r >= 0x09 && r <= 0x0d) || r == 0x85 || r == 0xa0;
  }
  return (
    r == 0x1680 ||
    (r >= 0x2000 && r <= 0x200a) ||
    r == 0x2028 ||
    r == 0x2029 ||
    r == 0x202f ||
    r == 0x205f ||
    r == 0x3000
  );
}
