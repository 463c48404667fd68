// Shortest round-trip printing of f64s, as JavaScript's Number#toString prints them.
//
// AssemblyScript's own float printer is not round-trip exact (it prints 0.1 + 0.2 as
// 0.30000000000000007), so digits come from Burger & Dybvig's free-format algorithm ("Printing
// Floating-Point Numbers Quickly and Accurately", 1996) on exact multi-precision integers: the
// shortest digit string that reads back as the same double, the closest one when several are
// that short. Floats are rare in policy documents, so exactness wins over speed here.

import {
  BIG_SIZE, bigSet, bigShiftLeft, bigMultiplyAdd, bigMultiplyPow10, bigCompare, bigAdd, bigSubtract,
} from "./bignum";
import { ByteBuffer } from "./buffer";

const r = memory.data(BIG_SIZE, 4);
const s = memory.data(BIG_SIZE, 4);
const mPlus = memory.data(BIG_SIZE, 4);
const mMinus = memory.data(BIG_SIZE, 4);
const sum = memory.data(BIG_SIZE, 4);
const digits = memory.data(32);

// @ts-ignore: decorator
@inline
function bigMultiplySmall(a: usize, m: u32): void {
  bigMultiplyAdd(a, m, 0);
}

// Whether r + m+ reaches s (or passes it when the bound itself does not read back as v).
function highEnough(inclusive: bool): bool {
  bigAdd(sum, r, mPlus);
  const c = bigCompare(sum, s);
  return inclusive ? c >= 0 : c > 0;
}

/** Set by shortestDigits: the k in v = 0.d1d2… × 10^k. */
let exponent10 = 0;

/** Writes the shortest decimal digits of a finite, positive v to `digits`; returns their count. */
function shortestDigits(v: f64): i32 {
  const bits = reinterpret<u64>(v);
  const biased = <i32>((bits >>> 52) & 0x7ff);
  const fraction = bits & 0xfffffffffffff;
  const f: u64 = biased ? fraction | 0x10000000000000 : fraction;
  const e = biased ? biased - 1075 : -1074;
  // Bounds that themselves read back as v (round half to even) are allowed.
  const boundsOk = (f & 1) == 0;
  // At a power of two the gap below is half the gap above.
  const unequalGaps = fraction == 0 && biased > 1;

  // v = r / s; the halfway points to the neighbouring doubles are (r ± m±) / s.
  if (e >= 0) {
    bigSet(r, f);
    bigShiftLeft(r, e + (unequalGaps ? 2 : 1));
    bigSet(s, unequalGaps ? 4 : 2);
    bigSet(mPlus, 1);
    bigShiftLeft(mPlus, unequalGaps ? e + 1 : e);
    bigSet(mMinus, 1);
    bigShiftLeft(mMinus, e);
  } else {
    bigSet(r, f);
    bigShiftLeft(r, unequalGaps ? 2 : 1);
    bigSet(s, 1);
    bigShiftLeft(s, unequalGaps ? 2 - e : 1 - e);
    bigSet(mPlus, unequalGaps ? 2 : 1);
    bigSet(mMinus, 1);
  }

  // Scale by 10^k so that the first digit comes out of r / s; the estimate is k or k - 1.
  let k = <i32>Math.ceil(Math.log10(v) - 1e-10);
  if (k >= 0) {
    bigMultiplyPow10(s, k);
  } else {
    bigMultiplyPow10(r, -k);
    bigMultiplyPow10(mPlus, -k);
    bigMultiplyPow10(mMinus, -k);
  }
  if (highEnough(boundsOk)) {
    k++;
  } else {
    bigMultiplySmall(r, 10);
    bigMultiplySmall(mPlus, 10);
    bigMultiplySmall(mMinus, 10);
  }
  exponent10 = k;

  let n = 0;
  while (true) {
    let d = 0;
    while (bigCompare(r, s) >= 0) {
      bigSubtract(r, s);
      d++;
    }
    const low = boundsOk ? bigCompare(r, mMinus) <= 0 : bigCompare(r, mMinus) < 0;
    const high = highEnough(boundsOk);
    if (!low && !high) {
      store<u8>(digits + n++, <u8>d);
      bigMultiplySmall(r, 10);
      bigMultiplySmall(mPlus, 10);
      bigMultiplySmall(mMinus, 10);
      continue;
    }
    if (low && high) {
      // Both d and d + 1 read back as v: take the closer one, the even one on a tie.
      bigAdd(sum, r, r);
      const c = bigCompare(sum, s);
      if (c > 0 || (c == 0 && (d & 1))) d++;
    } else if (high) {
      d++;
    }
    store<u8>(digits + n++, <u8>d);
    return n;
  }
}

/** Writes a finite f64 as JavaScript's Number#toString does (no "-0", exponents from 1e21 and below 1e-6). */
export function writeShortestF64(out: ByteBuffer, v: f64): void {
  if (v == 0) {
    out.writeByte(0x30);
    return;
  }
  if (v < 0) {
    out.writeByte(0x2d);
    v = -v;
  }
  const n = shortestDigits(v);
  const point = exponent10; // digits d1…dn are d1.d2… × 10^(point - 1)
  if (n <= point && point <= 21) {
    writeDigits(out, 0, n);
    for (let i = n; i < point; i++) out.writeByte(0x30);
  } else if (0 < point && point <= 21) {
    writeDigits(out, 0, point);
    out.writeByte(0x2e);
    writeDigits(out, point, n);
  } else if (-6 < point && point <= 0) {
    out.writeByte(0x30);
    out.writeByte(0x2e);
    for (let i = point; i < 0; i++) out.writeByte(0x30);
    writeDigits(out, 0, n);
  } else {
    writeDigits(out, 0, 1);
    if (n > 1) {
      out.writeByte(0x2e);
      writeDigits(out, 1, n);
    }
    out.writeByte(0x65);
    const e = point - 1;
    out.writeByte(e < 0 ? 0x2d : 0x2b);
    const magnitude = e < 0 ? -e : e;
    if (magnitude >= 100) out.writeByte(<u8>(0x30 + magnitude / 100));
    if (magnitude >= 10) out.writeByte(<u8>(0x30 + (magnitude / 10) % 10));
    out.writeByte(<u8>(0x30 + magnitude % 10));
  }
}

function writeDigits(out: ByteBuffer, from: i32, to: i32): void {
  for (let i = from; i < to; i++) out.writeByte(0x30 + load<u8>(digits + i));
}
