// Unsigned multi-precision integers for exact float conversion (float-format.ts,
// float-parse.ts). A big integer is a length word followed by little-endian u32 limbs, in a
// static buffer of BIG_SIZE bytes; the conversions never need more than 2^3000.

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

/** a = a * m + add */
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

/** dst = a + b (dst may be a or b) */
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
