// Go's `strconv` quoting. OPA renders a string inside a composite value with `strconv.Quote`, and
// sprintf's %q uses it too, so these must escape exactly the code points Go escapes.

import { TextBuffer } from "./text-buffer";
import { isPrint } from "./printable";
import { decodeRune, runeSize, MAX_RUNE, RUNE_ERROR } from "./utf8";

const HEX = memory.data<u8>([
  0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66,
]);

// @ts-ignore: decorator
@inline
function hexDigit(v: i32): i32 {
  return <i32>load<u8>(HEX + <usize>(v & 0xf));
}

function appendHexEscape(w: TextBuffer, marker: i32, v: i32, digits: i32): void {
  w.byte(0x5c);
  w.byte(marker);
  for (let shift = (digits - 1) * 4; shift >= 0; shift -= 4) w.byte(hexDigit(v >> shift));
}

/** Go's `appendEscapedRune`: `r` as it appears between `quote` characters. */
function appendEscapedRune(w: TextBuffer, r: i32, quote: i32, asciiOnly: bool): void {
  if (r == quote || r == 0x5c) {
    w.byte(0x5c);
    w.rune(r);
    return;
  }
  if (asciiOnly ? r < 0x80 && isPrint(r) : isPrint(r)) {
    w.rune(r);
    return;
  }
  switch (r) {
    case 0x07: w.ascii("\\a"); return;
    case 0x08: w.ascii("\\b"); return;
    case 0x0c: w.ascii("\\f"); return;
    case 0x0a: w.ascii("\\n"); return;
    case 0x0d: w.ascii("\\r"); return;
    case 0x09: w.ascii("\\t"); return;
    case 0x0b: w.ascii("\\v"); return;
  }
  if (r < 0x20 || r == 0x7f) {
    appendHexEscape(w, 0x78, r, 2);
  } else if (r > MAX_RUNE || (r >= 0xd800 && r <= 0xdfff) || r < 0) {
    appendHexEscape(w, 0x75, RUNE_ERROR, 4);
  } else if (r < 0x10000) {
    appendHexEscape(w, 0x75, r, 4);
  } else {
    appendHexEscape(w, 0x55, r, 8);
  }
}

/** `strconv.Quote` (or `QuoteToASCII` when `asciiOnly`) of the bytes at `p`. */
export function appendQuoted(w: TextBuffer, p: usize, len: i32, asciiOnly: bool): void {
  const end = p + <usize>len;
  w.byte(0x22);
  while (p < end) {
    const b = <i32>load<u8>(p);
    if (b < 0x80) {
      appendEscapedRune(w, b, 0x22, asciiOnly);
      p++;
      continue;
    }
    const r = decodeRune(p, end);
    if (r == RUNE_ERROR && runeSize == 1) {
      // An invalid byte is shown as itself, not as U+FFFD.
      appendHexEscape(w, 0x78, b, 2);
    } else {
      appendEscapedRune(w, r, 0x22, asciiOnly);
    }
    p += <usize>runeSize;
  }
  w.byte(0x22);
}

/** `strconv.QuoteRune` (or `QuoteRuneToASCII`): a single-quoted character literal. */
export function appendQuotedRune(w: TextBuffer, r: i32, asciiOnly: bool): void {
  if (r < 0 || r > MAX_RUNE || (r >= 0xd800 && r <= 0xdfff)) r = RUNE_ERROR;
  w.byte(0x27);
  appendEscapedRune(w, r, 0x27, asciiOnly);
  w.byte(0x27);
}

/** `strconv.CanBackquote`: whether `%#q` may print the bytes as a raw string literal. */
export function canBackquote(p: usize, len: i32): bool {
  const end = p + <usize>len;
  while (p < end) {
    const r = decodeRune(p, end);
    p += <usize>runeSize;
    if (runeSize > 1) {
      if (r == 0xfeff) return false;
      continue;
    }
    if (r == RUNE_ERROR) return false;
    if ((r < 0x20 && r != 0x09) || r == 0x60 || r == 0x7f) return false;
  }
  return true;
}
