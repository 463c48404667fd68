// Unsigned multi-precision integers, for exact float conversion (float-format.ts,
// float-parse.ts) and exact integer arithmetic beyond i64 (number.ts). A big integer is a length
// word followed by little-endian u32 limbs, the top limb nonzero (zero has no limbs). The float
// conversions work in static buffers of BIG_SIZE bytes (they never need more than 2^3000);
// integer arithmetic has no bound, so it sizes buffers on the heap with `bigAlloc`. Nothing
// checks capacity: a destination must have room for the result, as documented on each operation.

import { alloc } from "./heap";

// @ts-ignore: decorator
@inline const LIMBS: i32 = 96;
// @ts-ignore: decorator
@inline export const BIG_SIZE: i32 = (LIMBS + 1) * 4;

// @ts-ignore: decorator
@inline function lengthOf(a: usize): i32 { return load<i32>(a); }
// @ts-ignore: decorator
@inline function limb(a: usize, i: i32): u32 { return load<u32>(a + 4 + (<usize>i << 2)); }
// @ts-ignore: decorator
@inline function setLimb(a: usize, i: i32, v: u32): void { store<u32>(a + 4 + (<usize>i << 2), v); }

/** A zero big integer on the heap with room for `limbs` limbs. */
export function bigAlloc(limbs: i32): usize {
  const a = alloc((<usize>limbs + 1) << 2);
  store<i32>(a, 0);
  return a;
}

export function bigLimbCount(a: usize): i32 {
  return lengthOf(a);
}

/** Sets a to v; a needs room for 2 limbs. */
export function bigSet(a: usize, v: u64): void {
  setLimb(a, 0, <u32>v);
  setLimb(a, 1, <u32>(v >>> 32));
  store<i32>(a, v >>> 32 ? 2 : v ? 1 : 0);
}

export function bigIsZero(a: usize): bool {
  return lengthOf(a) == 0;
}

export function bigBitLength(a: usize): i32 {
  const n = lengthOf(a);
  return n == 0 ? 0 : (n << 5) - <i32>clz(limb(a, n - 1));
}

export function bigShiftLeft(a: usize, bits: i32): void {
  const words = bits >>> 5;
  const shift = bits & 31;
  let n = lengthOf(a);
  if (n == 0) return;
  if (shift) {
    let carry: u32 = 0;
    for (let i = 0; i < n; i++) {
      const x = limb(a, i);
      setLimb(a, i, (x << shift) | carry);
      carry = x >>> (32 - shift);
    }
    if (carry) setLimb(a, n++, carry);
  }
  if (words) {
    for (let i = n - 1; i >= 0; i--) setLimb(a, i + words, limb(a, i));
    for (let i = 0; i < words; i++) setLimb(a, i, 0);
    n += words;
  }
  store<i32>(a, n);
}

export function bigShiftRightOne(a: usize): void {
  let n = lengthOf(a);
  for (let i = 0; i < n; i++) {
    const high: u32 = i + 1 < n ? limb(a, i + 1) << 31 : 0;
    setLimb(a, i, (limb(a, i) >>> 1) | high);
  }
  if (n > 0 && limb(a, n - 1) == 0) n--;
  store<i32>(a, n);
}

/** a = a * m + add; a needs room for one limb more than it has. */
export function bigMultiplyAdd(a: usize, m: u32, add: u32): void {
  let carry: u64 = add;
  const n = lengthOf(a);
  for (let i = 0; i < n; i++) {
    const t = <u64>limb(a, i) * m + carry;
    setLimb(a, i, <u32>t);
    carry = t >>> 32;
  }
  if (carry) {
    setLimb(a, n, <u32>carry);
    store<i32>(a, n + 1);
  }
}

export function bigMultiplyPow10(a: usize, k: i32): void {
  for (; k >= 9; k -= 9) bigMultiplyAdd(a, 1000000000, 0);
  if (k > 0) bigMultiplyAdd(a, <u32>(<i32>Math.pow(10, k)), 0);
}

export function bigCompare(a: usize, b: usize): i32 {
  const n = lengthOf(a);
  const m = lengthOf(b);
  if (n != m) return n < m ? -1 : 1;
  for (let i = n - 1; i >= 0; i--) {
    const x = limb(a, i);
    const y = limb(b, i);
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

/** dst = a + b (dst may be a or b); dst needs room for one limb more than the longer. */
export function bigAdd(dst: usize, a: usize, b: usize): void {
  const la = lengthOf(a);
  const lb = lengthOf(b);
  const n = max(la, lb);
  let carry: u64 = 0;
  for (let i = 0; i < n; i++) {
    const x: u64 = i < la ? limb(a, i) : 0;
    const y: u64 = i < lb ? limb(b, i) : 0;
    const t = x + y + carry;
    setLimb(dst, i, <u32>t);
    carry = t >>> 32;
  }
  let len = n;
  if (carry) setLimb(dst, len++, <u32>carry);
  store<i32>(dst, len);
}

/** a -= b, for a >= b */
export function bigSubtract(a: usize, b: usize): void {
  let borrow: i64 = 0;
  let n = lengthOf(a);
  const lb = lengthOf(b);
  for (let i = 0; i < n; i++) {
    const y: i64 = i < lb ? <i64>limb(b, i) : 0;
    let t = <i64>limb(a, i) - y - borrow;
    borrow = t < 0 ? 1 : 0;
    if (t < 0) t += 0x100000000;
    setLimb(a, i, <u32>t);
  }
  while (n > 0 && limb(a, n - 1) == 0) n--;
  store<i32>(a, n);
}

/** The 64 bits below bit `from` (exclusive), with bit 0 set if any lower bit is set. */
export function bigBitsBelow(a: usize, from: i32): u64 {
  let result: u64 = 0;
  let sticky = false;
  const n = lengthOf(a);
  for (let bit = 0; bit < from; bit++) {
    const word = bit >>> 5;
    const set = word < n ? (limb(a, word) >>> (bit & 31)) & 1 : 0;
    if (bit >= from - 64) result |= <u64>set << <u64>(bit - (from - 64));
    else if (set) sticky = true;
  }
  return result | <u64>sticky;
}

/** The low 64 bits of a (all of it when bigBitLength(a) <= 64). */
export function bigLow64(a: usize): u64 {
  const n = lengthOf(a);
  if (n == 0) return 0;
  const low = <u64>limb(a, 0);
  return n == 1 ? low : low | (<u64>limb(a, 1) << 32);
}

/** dst = a * b; dst must not be a or b and needs room for the sum of their limb counts. */
export function bigMultiply(dst: usize, a: usize, b: usize): void {
  const la = lengthOf(a);
  const lb = lengthOf(b);
  if (la == 0 || lb == 0) {
    store<i32>(dst, 0);
    return;
  }
  for (let i = 0; i < lb; i++) setLimb(dst, i, 0);
  for (let i = 0; i < la; i++) {
    const x = <u64>limb(a, i);
    // x * y + limb + carry is at most (2^32 - 1)^2 + 2 * (2^32 - 1) = 2^64 - 1: no overflow.
    let carry: u64 = 0;
    for (let j = 0; j < lb; j++) {
      const t = x * <u64>limb(b, j) + <u64>limb(dst, i + j) + carry;
      setLimb(dst, i + j, <u32>t);
      carry = t >>> 32;
    }
    setLimb(dst, i + lb, <u32>carry);
  }
  let n = la + lb;
  while (n > 0 && limb(dst, n - 1) == 0) n--;
  store<i32>(dst, n);
}

/** a = a / d, returning the remainder; d must not be 0. */
export function bigDivideSmall(a: usize, d: u32): u32 {
  let n = lengthOf(a);
  let remainder: u64 = 0;
  for (let i = n - 1; i >= 0; i--) {
    const t = (remainder << 32) | <u64>limb(a, i);
    setLimb(a, i, <u32>(t / d));
    remainder = t % d;
  }
  while (n > 0 && limb(a, n - 1) == 0) n--;
  store<i32>(a, n);
  return <u32>remainder;
}

// 10^9 is the largest power of ten below 2^32, so decimal text converts nine digits per limb
// operation.
// @ts-ignore: decorator
@inline const CHUNK_DIGITS: i32 = 9;
// @ts-ignore: decorator
@inline const CHUNK: u32 = 1000000000;

/** The limbs a number of `digits` decimal digits may need (10^9 < 2^32: one per nine digits). */
export function bigLimbsForDigits(digits: i32): i32 {
  return digits / CHUNK_DIGITS + 1;
}

/**
 * Sets a to the decimal digits at ptr (ASCII 0-9 only, leading zeros allowed); a needs room
 * for bigLimbsForDigits(len) limbs.
 */
export function bigSetDecimal(a: usize, ptr: usize, len: i32): void {
  store<i32>(a, 0);
  const end = ptr + <usize>len;
  let p = ptr;
  // The first chunk takes the digits beyond a multiple of nine, so the rest are whole chunks.
  let count = len % CHUNK_DIGITS;
  if (count == 0) count = CHUNK_DIGITS;
  while (p < end) {
    let chunk: u32 = 0;
    let scale: u32 = 1;
    for (let i = 0; i < count; i++) {
      chunk = chunk * 10 + (<u32>load<u8>(p++) - 0x30);
      scale *= 10;
    }
    bigMultiplyAdd(a, scale, chunk);
    count = CHUNK_DIGITS;
  }
}

/** Bytes enough for the decimal digits of a (2^32 < 10^10: ten per limb, one for zero). */
export function bigDecimalBound(a: usize): i32 {
  return lengthOf(a) * 10 + 1;
}

/**
 * Writes the decimal digits of a backwards so that they end just before `end`, and returns
 * where they start; no leading zeros ("0" for zero). Consumes a: it is zero afterwards.
 */
export function bigWriteDecimal(a: usize, end: usize): usize {
  let p = end;
  do {
    let chunk = bigDivideSmall(a, CHUNK);
    if (bigIsZero(a)) {
      // The most significant chunk: its digits only, no zero padding.
      do {
        store<u8>(--p, <u8>(chunk % 10) + 0x30);
        chunk /= 10;
      } while (chunk);
    } else {
      for (let i = 0; i < CHUNK_DIGITS; i++) {
        store<u8>(--p, <u8>(chunk % 10) + 0x30);
        chunk /= 10;
      }
    }
  } while (!bigIsZero(a));
  return p;
}
