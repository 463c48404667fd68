// Numbers as JSON text: integers in decimal, floats read from text as they were written, other
// floats in the shortest form that reads back as the same f64 (the form JavaScript prints), big
// integers as the text they were written with.

import { ByteBuffer } from "./buffer";
import { writeShortestF64 } from "./float-format";
import { Value, NumberValue, NUMBER_INT, NUMBER_FLOAT } from "./value";

// Scratch for the digits of an integer, written backwards.
const scratch = memory.data(24);

export function writeI64(out: ByteBuffer, i: i64): void {
  // The magnitude as u64 also covers i64.MIN_VALUE.
  let n: u64 = i < 0 ? <u64>(-i) : <u64>i;
  let p = scratch + 24;
  // Eight digits at a time in u64, then u32 arithmetic, which is much cheaper.
  while (n >= 100000000) {
    const q = n / 100000000;
    let chunk = <u32>(n - q * 100000000);
    for (let d = 0; d < 8; d++) {
      store<u8>(--p, <u8>(chunk % 10) + 0x30);
      chunk /= 10;
    }
    n = q;
  }
  let m = <u32>n;
  do {
    store<u8>(--p, <u8>(m % 10) + 0x30);
    m /= 10;
  } while (m);
  if (i < 0) store<u8>(--p, 0x2d);
  out.writeBytes(p, <i32>(scratch + 24 - p));
}

export function writeF64(out: ByteBuffer, f: f64): void {
  // Up to 2^53 an integral float's exact digits are also its shortest ones.
  if (f == Math.trunc(f) && Math.abs(f) <= 9007199254740992.0) writeI64(out, <i64>f);
  else writeShortestF64(out, f);
}

export function writeNumber(out: ByteBuffer, v: Value): void {
  const n = changetype<NumberValue>(v);
  if (n.kind == NUMBER_INT) writeI64(out, n.bits);
  else if (n.kind == NUMBER_FLOAT && n.textLen == 0) writeF64(out, reinterpret<f64>(n.bits));
  else out.writeBytes(n.text, n.textLen);
}
