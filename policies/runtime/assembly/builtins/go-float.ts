// Go's `strconv.AppendFloat(dst, v, fmt, prec, 64)` for the formats 'e', 'E', 'f', 'g', 'G',
// 'b', 'x' and 'X', as sprintf needs them for Rego numbers that are not integers.
//
// Digits come from the exact decimal expansion of the double (a multi-precision integer in
// base 10^9), then are rounded the way Go's `decimal` type rounds: half to even on exact ties.
// The shortest form (prec < 0) uses Go's `roundShortest` walk between the two neighbouring
// halfway points, so %v prints the same digits Go does.

import { TextBuffer } from "./text-buffer";

const MANT_BITS: i32 = 52;
const EXP_BIAS: i32 = -1023;
const MIN_EXP: i32 = EXP_BIAS + 1;

/** Enough for the longest expansion roundShortest builds: 2^54 * 5^1076, about 769 digits. */
const MAX_DIGITS: i32 = 800;
const MAX_LIMBS: i32 = 96;
const LIMB_BASE: u64 = 1000000000;

/** A decimal number 0.d[0]d[1]...d[nd-1] * 10^dp with ASCII digits and no trailing zeros. */
// @ts-ignore: decorator
@unmanaged
class Decimal {
  nd: i32;
  dp: i32;

  // @ts-ignore: decorator
  @inline
  get digits(): usize {
    return changetype<usize>(this) + offsetof<Decimal>();
  }

  // @ts-ignore: decorator
  @inline
  digit(i: i32): i32 {
    return <i32>load<u8>(this.digits + <usize>i);
  }
}

const DECIMAL_SIZE: i32 = <i32>offsetof<Decimal>() + MAX_DIGITS;
const value = changetype<Decimal>(memory.data(DECIMAL_SIZE));
const upper = changetype<Decimal>(memory.data(DECIMAL_SIZE));
const lower = changetype<Decimal>(memory.data(DECIMAL_SIZE));

const limbs = memory.data(MAX_LIMBS * 4);
let limbCount = 0;

function multiplyLimbs(m: u64): void {
  let carry: u64 = 0;
  for (let i = 0; i < limbCount; i++) {
    const at = limbs + (<usize>i << 2);
    const t = <u64>load<u32>(at) * m + carry;
    store<u32>(at, <u32>(t % LIMB_BASE));
    carry = t / LIMB_BASE;
  }
  while (carry != 0) {
    store<u32>(limbs + (<usize>limbCount << 2), <u32>(carry % LIMB_BASE));
    limbCount++;
    carry /= LIMB_BASE;
  }
}

function trimZeros(d: Decimal): void {
  while (d.nd > 0 && d.digit(d.nd - 1) == 0x30) d.nd--;
  if (d.nd == 0) d.dp = 0;
}

/** Sets `d` to exactly mant * 2^shift. */
function assign(d: Decimal, mant: u64, shift: i32): void {
  d.nd = 0;
  d.dp = 0;
  if (mant == 0) return;
  limbCount = 0;
  for (let m = mant; m != 0; m /= LIMB_BASE) {
    store<u32>(limbs + (<usize>limbCount << 2), <u32>(m % LIMB_BASE));
    limbCount++;
  }
  if (shift > 0) {
    for (let s = shift; s > 0; s -= 28) multiplyLimbs(<u64>1 << <u64>min(s, 28));
  } else {
    // mant / 2^k = mant * 5^k / 10^k: the digits of mant * 5^k, with the point k places left.
    for (let s = -shift; s > 0; s -= 13) {
      let p: u64 = 1;
      for (let i = min(s, 13); i > 0; i--) p *= 5;
      multiplyLimbs(p);
    }
  }
  const out = d.digits;
  let n = 0;
  let top = load<u32>(limbs + (<usize>(limbCount - 1) << 2));
  let topDigits = 1;
  for (let t = top; t >= 10; t /= 10) topDigits++;
  for (let i = topDigits - 1; i >= 0; i--) {
    store<u8>(out + <usize>i, <u8>(0x30 + top % 10));
    top /= 10;
  }
  n = topDigits;
  for (let l = limbCount - 2; l >= 0; l--) {
    let v = load<u32>(limbs + (<usize>l << 2));
    for (let i = 8; i >= 0; i--) {
      store<u8>(out + <usize>(n + i), <u8>(0x30 + v % 10));
      v /= 10;
    }
    n += 9;
  }
  d.nd = n;
  d.dp = shift < 0 ? n + shift : n;
  trimZeros(d);
}

function shouldRoundUp(d: Decimal, nd: i32): bool {
  if (nd < 0 || nd >= d.nd) return false;
  if (d.digit(nd) == 0x35 && nd + 1 == d.nd) {
    // Exactly halfway: round to even.
    return nd > 0 && ((d.digit(nd - 1) - 0x30) & 1) == 1;
  }
  return d.digit(nd) >= 0x35;
}

function roundUp(d: Decimal, nd: i32): void {
  if (nd < 0 || nd >= d.nd) return;
  for (let i = nd - 1; i >= 0; i--) {
    const c = d.digit(i);
    if (c < 0x39) {
      store<u8>(d.digits + <usize>i, <u8>(c + 1));
      d.nd = i + 1;
      return;
    }
  }
  // All nines: the number becomes 1 followed by zeros.
  store<u8>(d.digits, 0x31);
  d.nd = 1;
  d.dp++;
}

function roundDown(d: Decimal, nd: i32): void {
  if (nd < 0 || nd >= d.nd) return;
  d.nd = nd;
  trimZeros(d);
}

function round(d: Decimal, nd: i32): void {
  if (nd < 0 || nd >= d.nd) return;
  if (shouldRoundUp(d, nd)) roundUp(d, nd);
  else roundDown(d, nd);
}

/** Go's `roundShortest`: the fewest digits that still read back as the same double. */
function roundShortest(d: Decimal, mant: u64, exp: i32): void {
  if (mant == 0) {
    d.nd = 0;
    return;
  }
  // Already shortest when the next shorter decimal is farther away than the rounding interval.
  if (exp > MIN_EXP && 332 * (d.dp - d.nd) >= 100 * (exp - MANT_BITS)) return;

  assign(upper, mant * 2 + 1, exp - MANT_BITS - 1);
  let mantLo: u64;
  let expLo: i32;
  if (mant > (<u64>1 << MANT_BITS) || exp == MIN_EXP) {
    mantLo = mant - 1;
    expLo = exp;
  } else {
    mantLo = mant * 2 - 1;
    expLo = exp - 1;
  }
  assign(lower, mantLo * 2 + 1, expLo - MANT_BITS - 1);

  // The bounds themselves read back as the double only when its mantissa is even.
  const inclusive = (mant & 1) == 0;
  let upperDelta = 0;
  for (let ui = 0; ; ui++) {
    const mi = ui - upper.dp + d.dp;
    if (mi >= d.nd) break;
    const li = ui - upper.dp + lower.dp;
    const l = li >= 0 && li < lower.nd ? lower.digit(li) : 0x30;
    const m = mi >= 0 ? d.digit(mi) : 0x30;
    const u = ui < upper.nd ? upper.digit(ui) : 0x30;

    const okDown = l != m || (inclusive && li + 1 == lower.nd);
    if (upperDelta == 0 && m + 1 < u) upperDelta = 2;
    else if (upperDelta == 0 && m != u) upperDelta = 1;
    else if (upperDelta == 1 && (m != 0x39 || u != 0x30)) upperDelta = 2;
    const okUp = upperDelta > 0 && (inclusive || upperDelta > 1 || ui + 1 < upper.nd);

    if (okDown && okUp) {
      round(d, mi + 1);
      return;
    }
    if (okDown) {
      roundDown(d, mi + 1);
      return;
    }
    if (okUp) {
      roundUp(d, mi + 1);
      return;
    }
  }
}

function appendExponentDigits(w: TextBuffer, exp: i32, minDigits: i32): void {
  let digits = 1;
  for (let t = exp; t >= 10; t /= 10) digits++;
  w.repeat(0x30, minDigits - digits);
  w.unsignedDecimal(<u64>exp);
}

/** %e: -d.ddddde±dd */
function formatE(w: TextBuffer, neg: bool, d: Decimal, prec: i32, fmt: i32): void {
  if (neg) w.byte(0x2d);
  w.byte(d.nd != 0 ? d.digit(0) : 0x30);
  if (prec > 0) {
    w.byte(0x2e);
    let i = 1;
    const m = min(d.nd, prec + 1);
    if (i < m) {
      w.bytes(d.digits + 1, m - 1);
      i = m;
    }
    w.repeat(0x30, prec + 1 - i);
  }
  w.byte(fmt);
  let exp = d.nd == 0 ? 0 : d.dp - 1;
  if (exp < 0) {
    w.byte(0x2d);
    exp = -exp;
  } else {
    w.byte(0x2b);
  }
  appendExponentDigits(w, exp, 2);
}

/** %f: -ddddddd.ddddd */
function formatF(w: TextBuffer, neg: bool, d: Decimal, prec: i32): void {
  if (neg) w.byte(0x2d);
  if (d.dp > 0) {
    const m = min(d.nd, d.dp);
    w.bytes(d.digits, m);
    w.repeat(0x30, d.dp - m);
  } else {
    w.byte(0x30);
  }
  if (prec > 0) {
    w.byte(0x2e);
    for (let i = 1; i <= prec; i++) {
      const j = d.dp + i - 1;
      w.byte(j >= 0 && j < d.nd ? d.digit(j) : 0x30);
    }
  }
}

/** %b: -ddddddddp±ddd, the mantissa and binary exponent as decimal integers. */
function formatB(w: TextBuffer, neg: bool, mant: u64, exp: i32): void {
  if (neg) w.byte(0x2d);
  w.unsignedDecimal(mant);
  w.byte(0x70);
  const e = exp - MANT_BITS;
  if (e >= 0) w.byte(0x2b);
  w.decimal(e);
}

/** %x: -0x1.yyyyyyyyp±ddd, hexadecimal mantissa and decimal power of two. */
function formatX(w: TextBuffer, prec: i32, fmt: i32, neg: bool, mant: u64, exp: i32): void {
  if (mant == 0) exp = 0;
  // Move the leading 1 (if any) to bit 60.
  mant <<= <u64>(60 - MANT_BITS);
  while (mant != 0 && (mant & (<u64>1 << 60)) == 0) {
    mant <<= 1;
    exp--;
  }
  if (prec >= 0 && prec < 15) {
    const shift = <u64>(prec * 4);
    const extra = (mant << shift) & ((<u64>1 << 60) - 1);
    mant >>= 60 - shift;
    if ((extra | (mant & 1)) > (<u64>1 << 59)) mant++;
    mant <<= 60 - shift;
    if ((mant & (<u64>1 << 61)) != 0) {
      mant >>= 1;
      exp++;
    }
  }
  const upperCase = fmt == 0x58;
  const letters = upperCase ? 0x41 : 0x61;
  if (neg) w.byte(0x2d);
  w.byte(0x30);
  w.byte(fmt);
  w.byte(0x30 + <i32>((mant >> 60) & 1));
  mant <<= 4;
  if ((prec < 0 && mant != 0) || prec > 0) {
    w.byte(0x2e);
    for (let i = 0; prec < 0 ? mant != 0 : i < prec; i++) {
      const h = <i32>((mant >> 60) & 15);
      w.byte(h < 10 ? 0x30 + h : letters + h - 10);
      mant <<= 4;
    }
  }
  w.byte(upperCase ? 0x50 : 0x70);
  if (exp < 0) {
    w.byte(0x2d);
    exp = -exp;
  } else {
    w.byte(0x2b);
  }
  appendExponentDigits(w, exp, 2);
}

/** Appends `strconv.FormatFloat(v, fmt, prec, 64)`; a negative `prec` means shortest. */
export function appendFloat(w: TextBuffer, v: f64, fmt: i32, prec: i32): void {
  const bits = reinterpret<u64>(v);
  const neg = (bits >> 63) != 0;
  let exp = <i32>((bits >> <u64>MANT_BITS) & 0x7ff);
  let mant = bits & ((<u64>1 << <u64>MANT_BITS) - 1);
  if (exp == 0x7ff) {
    w.ascii(mant != 0 ? "NaN" : neg ? "-Inf" : "+Inf");
    return;
  }
  if (exp == 0) exp++;
  else mant |= <u64>1 << <u64>MANT_BITS;
  exp += EXP_BIAS;

  if (fmt == 0x62) {
    formatB(w, neg, mant, exp);
    return;
  }
  if (fmt == 0x78 || fmt == 0x58) {
    formatX(w, prec, fmt, neg, mant, exp);
    return;
  }

  const d = value;
  assign(d, mant, exp - MANT_BITS);
  const shortest = prec < 0;
  if (shortest) {
    roundShortest(d, mant, exp);
    if (fmt == 0x65 || fmt == 0x45) prec = max(d.nd - 1, 0);
    else if (fmt == 0x66) prec = max(d.nd - d.dp, 0);
    else prec = d.nd;
  } else if (fmt == 0x65 || fmt == 0x45) {
    round(d, prec + 1);
  } else if (fmt == 0x66) {
    round(d, d.dp + prec);
  } else {
    if (prec == 0) prec = 1;
    round(d, prec);
  }

  if (fmt == 0x65 || fmt == 0x45) {
    formatE(w, neg, d, prec, fmt);
  } else if (fmt == 0x66) {
    formatF(w, neg, d, prec);
  } else {
    // %g: %e for large or small exponents, %f otherwise.
    let eprec = prec;
    if (eprec > d.nd && d.nd >= d.dp) eprec = d.nd;
    if (shortest) eprec = 6;
    const e = d.dp - 1;
    if (e < -4 || e >= eprec) {
      if (prec > d.nd) prec = d.nd;
      formatE(w, neg, d, prec - 1, fmt == 0x47 ? 0x45 : 0x65);
    } else {
      if (prec > d.dp) prec = d.nd;
      formatF(w, neg, d, max(prec - d.dp, 0));
    }
  }
}
