import { ByteBuffer, Value, UNDEFINED, isString, stringCopy, stringData, stringLength } from "../value";
import { encodeRune } from "./utf8";

/** Bytes a static buffer holds before it moves to the heap. */
const INLINE_CAP: i32 = 1024;

/**
 * A ByteBuffer that lives in static memory, followed by its own inline block, for the text a
 * builtin builds on the way to its result. Short text never touches the heap; longer text grows
 * onto it like any ByteBuffer. The host resets the heap between evaluations, so `begin()` starts
 * every use afresh on the inline block instead of keeping a heap block from an earlier call.
 */
// @ts-ignore: decorator
@unmanaged
export class TextBuffer extends ByteBuffer {
  /** A buffer wholly on the heap, for text that must outlive the next use of a static one. */
  static onHeap(capacity: i32): TextBuffer {
    // TextBuffer adds methods but no fields, so any ByteBuffer is one; never `begin()` it.
    return changetype<TextBuffer>(ByteBuffer.create(capacity));
  }

  /** Starts a fresh, empty use of a static buffer. */
  begin(): void {
    this.data = changetype<usize>(this) + offsetof<TextBuffer>();
    this.cap = INLINE_CAP;
    this.len = 0;
  }

  byte(c: i32): void {
    this.writeByte(<u8>c);
  }

  bytes(src: usize, n: i32): void {
    if (n > 0) this.writeBytes(src, n);
  }

  repeat(c: i32, n: i32): void {
    if (n <= 0) return;
    memory.fill(this.reserve(n), <u8>c, <usize>n);
    this.len += n;
  }

  ascii(s: string): void {
    this.writeAscii(s);
  }

  rune(r: i32): void {
    const at = this.reserve(4);
    this.len += encodeRune(at, r);
  }

  /** v in decimal, zero-padded to `width` digits after any sign. */
  decimal(v: i64, width: i32 = 0): void {
    if (v < 0) {
      this.byte(0x2d);
      this.unsignedDecimal(<u64>0 - <u64>v, width);
    } else {
      this.unsignedDecimal(<u64>v, width);
    }
  }

  /** v in decimal, zero-padded to `width` digits. */
  unsignedDecimal(v: u64, width: i32 = 0): void {
    let digits = 1;
    for (let t = v; t >= 10; t /= 10) digits++;
    this.repeat(0x30, width - digits);
    const at = this.reserve(digits);
    for (let i = digits - 1; i >= 0; i--) {
      store<u8>(at + <usize>i, <u8>(0x30 + <i32>(v % 10)));
      v /= 10;
    }
    this.len += digits;
  }

  /** The `n` bytes at `p` in lower-case hexadecimal, two digits a byte. */
  hex(p: usize, n: i32): void {
    const at = this.reserve(n << 1);
    for (let i = 0; i < n; i++) {
      const b = <i32>load<u8>(p + <usize>i);
      store<u8>(at + (<usize>i << 1), hexDigit(b >> 4));
      store<u8>(at + (<usize>i << 1), hexDigit(b & 15), 1);
    }
    this.len += n << 1;
  }

  /** Shortens the text to `len` bytes. */
  truncate(len: i32): void {
    this.len = len;
  }

  /** A string value holding a heap copy of the text. */
  toStringCopy(): Value {
    return stringCopy(this.data, this.len);
  }
}

// @ts-ignore: decorator
@inline
function hexDigit(v: i32): u8 {
  return <u8>(v < 10 ? 0x30 + v : 0x57 + v);
}

const BUFFER_SIZE: i32 = <i32>offsetof<TextBuffer>() + INLINE_CAP;

/** The text of a builtin's result. */
export const output = changetype<TextBuffer>(memory.data(BUFFER_SIZE, 8));

/** Intermediate text: the Rego text of sprintf operands. */
export const scratch = changetype<TextBuffer>(memory.data(BUFFER_SIZE, 8));

/** One formatted piece (a number, a quoted string) until it is padded into place. */
export const piece = changetype<TextBuffer>(memory.data(BUFFER_SIZE, 8));

/** Fixed-size records, e.g. sprintf's operand table. */
export const records = changetype<TextBuffer>(memory.data(BUFFER_SIZE, 8));

/**
 * What a string builtin writes for the `len` bytes of its operand at `p`: false when they are not
 * text it takes.
 */
export type StringRewrite = (out: TextBuffer, p: usize, len: i32) => bool;

/** The text `rewrite` writes for the string `s`, as a new string; undefined for a non-string or text it refuses. */
export function rewrittenString(s: Value, rewrite: StringRewrite): Value {
  if (!isString(s)) return UNDEFINED;
  output.begin();
  return rewrite(output, stringData(s), stringLength(s)) ? output.toStringCopy() : UNDEFINED;
}
