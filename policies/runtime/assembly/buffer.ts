// A growable byte buffer on the heap, for building strings and JSON text. When its bytes are
// the most recent allocation (the usual case while one value is being written) it grows in
// place, so writing never copies.

import { alloc, copyBytes, realloc } from "./heap";
import { Value, stringValue } from "./value";

@unmanaged export class ByteBuffer {
  data: usize;
  len: i32;
  cap: i32;

  static create(capacity: i32): ByteBuffer {
    const b = changetype<ByteBuffer>(alloc(offsetof<ByteBuffer>()));
    b.data = alloc(<usize>capacity);
    b.len = 0;
    b.cap = capacity;
    return b;
  }

  /** Ensures room for n more bytes and returns where they go; `len` is not advanced. */
  // @ts-ignore: decorator
  @inline
  reserve(n: i32): usize {
    if (this.len + n > this.cap) this.grow(n);
    return this.data + <usize>this.len;
  }

  grow(n: i32): void {
    const cap = max(this.cap << 1, this.len + n);
    this.data = realloc(this.data, <usize>this.cap, <usize>cap);
    this.cap = cap;
  }

  // @ts-ignore: decorator
  @inline
  writeByte(b: u8): void {
    store<u8>(this.reserve(1), b);
    this.len++;
  }

  writeBytes(ptr: usize, n: i32): void {
    copyBytes(this.reserve(n), ptr, n);
    this.len += n;
  }

  /** Writes an ASCII AssemblyScript string (runtime literals such as "true"). */
  writeAscii(s: string): void {
    const n = s.length;
    const at = this.reserve(n);
    for (let i = 0; i < n; i++) store<u8>(at + i, <u8>s.charCodeAt(i));
    this.len += n;
  }

  /** A string value over the bytes written so far (not copied: stop writing afterwards). */
  toStringValue(): Value {
    return stringValue(this.data, this.len);
  }

  /** Appends a NUL and returns the address of the C string. */
  toCString(): usize {
    this.writeByte(0);
    return this.data;
  }
}
