// Base64 as Go's base64.StdEncoding and base64.URLEncoding encode and decode it (RFC 4648, the
// standard or the URL-safe alphabet): decoding skips CR and LF anywhere, requires correct
// padding, and refuses anything after it.

import { TextBuffer } from "./text-buffer";

const ALPHABET = memory.data<u8>([
  0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f, 0x50,
  0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66,
  0x67, 0x68, 0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f, 0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76,
  0x77, 0x78, 0x79, 0x7a, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x2b, 0x2f,
]);

/** The URL-safe alphabet differs only in its last two symbols: `-` and `_` for `+` and `/`. */
const URL_SYMBOL_62: u8 = 0x2d;
const URL_SYMBOL_63: u8 = 0x5f;

// @ts-ignore: decorator
@inline
function symbol(sextet: u32, url: bool): u8 {
  const s = sextet & 0x3f;
  if (url && s >= 62) return s == 62 ? URL_SYMBOL_62 : URL_SYMBOL_63;
  return load<u8>(ALPHABET + <usize>s);
}

/**
 * Appends the base64 encoding of `len` bytes at `p`, in the URL-safe alphabet if `url`, padded
 * with `=` to a multiple of four characters if `pad`.
 */
export function encodeBase64(out: TextBuffer, p: usize, len: i32, url: bool = false, pad: bool = true): void {
  const at = out.reserve(((len + 2) / 3) * 4);
  let o = at;
  let i = 0;
  for (; i + 3 <= len; i += 3) {
    const v = (<u32>load<u8>(p + <usize>i) << 16) | (<u32>load<u8>(p + <usize>i, 1) << 8) | <u32>load<u8>(p + <usize>i, 2);
    store<u8>(o, symbol(v >> 18, url));
    store<u8>(o, symbol(v >> 12, url), 1);
    store<u8>(o, symbol(v >> 6, url), 2);
    store<u8>(o, symbol(v, url), 3);
    o += 4;
  }
  const rest = len - i;
  if (rest > 0) {
    let v = <u32>load<u8>(p + <usize>i) << 16;
    if (rest == 2) v |= <u32>load<u8>(p + <usize>i, 1) << 8;
    store<u8>(o, symbol(v >> 18, url));
    store<u8>(o, symbol(v >> 12, url), 1);
    o += 2;
    if (rest == 2) store<u8>(o++, symbol(v >> 6, url));
    else if (pad) store<u8>(o++, 0x3d);
    if (pad) store<u8>(o++, 0x3d);
  }
  out.len += <i32>(o - at);
}

/** The 6-bit value of a base64 symbol of the standard or the URL-safe alphabet, or -1. */
function sextetOf(c: i32, url: bool): i32 {
  if (c >= 0x41 && c <= 0x5a) return c - 0x41;
  if (c >= 0x61 && c <= 0x7a) return c - 0x61 + 26;
  if (c >= 0x30 && c <= 0x39) return c - 0x30 + 52;
  if (c == (url ? <i32>URL_SYMBOL_62 : 0x2b)) return 62;
  if (c == (url ? <i32>URL_SYMBOL_63 : 0x2f)) return 63;
  return -1;
}

// @ts-ignore: decorator
@inline
function isNewline(c: i32): bool {
  return c == 0x0a || c == 0x0d;
}

/**
 * Appends the bytes `len` base64 characters at `p` (of the URL-safe alphabet if `url`) decode to;
 * false if they are not valid.
 */
export function decodeBase64(out: TextBuffer, p: usize, len: i32, url: bool = false): bool {
  let si = 0;
  while (true) {
    // Gather one quantum of up to four symbols.
    let value: u32 = 0;
    let count = 0;
    while (count < 4) {
      if (si == len) {
        // The input may end only between quanta: padding is required.
        return count == 0;
      }
      const c = <i32>load<u8>(p + <usize>si);
      si++;
      const sextet = sextetOf(c, url);
      if (sextet >= 0) {
        value = (value << 6) | <u32>sextet;
        count++;
        continue;
      }
      if (isNewline(c)) continue;
      if (c != 0x3d || count < 2) return false;
      // Padding: "==" after two symbols, "=" after three, then nothing but newlines.
      if (count == 2) {
        while (si < len && isNewline(<i32>load<u8>(p + <usize>si))) si++;
        if (si == len || load<u8>(p + <usize>si) != 0x3d) return false;
        si++;
      }
      while (si < len && isNewline(<i32>load<u8>(p + <usize>si))) si++;
      if (si < len) return false;
      break;
    }
    if (count == 4) {
      out.byte(<i32>(value >> 16));
      out.byte(<i32>(value >> 8));
      out.byte(<i32>value);
      continue;
    }
    // A padded final quantum: its unused low bits are ignored, as StdEncoding does.
    value <<= 6 * (4 - count);
    out.byte(<i32>(value >> 16));
    if (count == 3) out.byte(<i32>(value >> 8));
    return true;
  }
  return true;
}
