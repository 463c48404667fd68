// Correctly rounded decimal-to-f64 conversion for the numbers the fast path in json-parse.ts
// cannot convert exactly (more than 19 significant digits, or large exponents). The decimal is
// made an exact big integer ratio and divided down to 64 significant bits plus a sticky bit,
// which f64.convert_i64_u then rounds to nearest-even. (AssemblyScript's parseFloat is not
// correctly rounded: it reads 3.5579257809219045e+43 as 3.557925780921904e+38.)

import {
  BIG_SIZE, bigSet, bigIsZero, bigBitLength, bigShiftLeft, bigShiftRightOne, bigMultiplyAdd,
  bigMultiplyPow10, bigCompare, bigSubtract, bigBitsBelow,
} from "./bignum";

// Digits beyond this many only decide rounding through a sticky digit.
// @ts-ignore: decorator
@inline const MAX_DIGITS: i32 = 100;

const numerator = memory.data(BIG_SIZE, 4);
const denominator = memory.data(BIG_SIZE, 4);

/**
 * The f64 nearest to the decimal written at ptr: an optional sign, digits with an optional point,
 * an optional exponent (the caller has checked the syntax). ±Infinity beyond the f64 range.
 */
export function parseDecimal(ptr: usize, len: i32): f64 {
  let p = ptr;
  const end = ptr + <usize>len;
  let negative = false;
  if (p < end && (load<u8>(p) == 0x2d || load<u8>(p) == 0x2b)) negative = load<u8>(p++) == 0x2d;

  // numerator = significant digits; value = numerator × 10^exponent.
  bigSet(numerator, 0);
  let digits = 0;
  let exponent = 0;
  let truncated = false;
  let afterPoint = false;
  for (; p < end; p++) {
    const c = load<u8>(p);
    if (c == 0x2e) {
      afterPoint = true;
      continue;
    }
    const d = <u32>c - 0x30;
    if (d > 9) break;
    if (digits == 0 && d == 0) {
      if (afterPoint) exponent--;
      continue;
    }
    if (digits < MAX_DIGITS) {
      bigMultiplyAdd(numerator, 10, d);
      digits++;
      if (afterPoint) exponent--;
    } else {
      truncated = truncated || d != 0;
      if (!afterPoint) exponent++;
    }
  }
  if (p < end && (load<u8>(p) | 0x20) == 0x65) {
    p++;
    let negativeExponent = false;
    if (p < end && (load<u8>(p) == 0x2d || load<u8>(p) == 0x2b)) negativeExponent = load<u8>(p++) == 0x2d;
    let e = 0;
    for (; p < end; p++) {
      const d = <i32>load<u8>(p) - 0x30;
      if (e < 100000) e = e * 10 + d;
    }
    exponent += negativeExponent ? -e : e;
  }
  if (truncated) {
    // A nonzero digit past the kept ones: the value lies strictly above what was kept.
    bigMultiplyAdd(numerator, 10, 1);
    digits++;
    exponent--;
  }

  let magnitude: f64;
  if (bigIsZero(numerator) || digits + exponent < -324) magnitude = 0;
  else if (digits + exponent > 310) magnitude = Infinity;
  else if (exponent >= 0) magnitude = integerToF64(exponent);
  else magnitude = ratioToF64(-exponent);
  return negative ? -magnitude : magnitude;
}

// numerator × 10^exponent, an integer.
function integerToF64(exponent: i32): f64 {
  bigMultiplyPow10(numerator, exponent);
  const bits = bigBitLength(numerator);
  if (bits <= 64) return <f64>bigBitsBelow(numerator, 64);
  return NativeMath.scalbn(<f64>bigBitsBelow(numerator, bits), bits - 64);
}

// numerator / 10^scale, by binary long division to a 63- or 64-bit quotient plus a sticky bit.
function ratioToF64(scale: i32): f64 {
  bigSet(denominator, 1);
  bigMultiplyPow10(denominator, scale);
  // quotient = numerator × 2^shift / denominator lies in [2^62, 2^64).
  const shift = 63 + bigBitLength(denominator) - bigBitLength(numerator);
  if (shift >= 0) bigShiftLeft(numerator, shift);
  else bigShiftLeft(denominator, -shift);
  bigShiftLeft(denominator, 63);
  let quotient: u64 = 0;
  for (let bit = 63; bit >= 0; bit--) {
    if (bigCompare(numerator, denominator) >= 0) {
      bigSubtract(numerator, denominator);
      quotient |= <u64>1 << <u64>bit;
    }
    bigShiftRightOne(denominator);
  }
  const sticky = !bigIsZero(numerator);

  // value = quotient × 2^-shift. Below 2^-1022 the result is subnormal: round to a multiple of
  // 2^-1074 here, so that the final scaling is exact.
  const topExponent = 63 - <i32>clz(quotient) - shift;
  if (topExponent >= -1022) return NativeMath.scalbn(<f64>(quotient | <u64>sticky), -shift);
  const dropped = shift - 1074;
  // quotient < 2^64, so beyond 64 dropped bits the value is below half the smallest subnormal.
  if (dropped > 64) return 0;
  let kept: u64 = dropped == 64 ? 0 : quotient >>> <u64>dropped;
  const rest = dropped == 64 ? quotient : quotient & ((<u64>1 << <u64>dropped) - 1);
  const half = <u64>1 << <u64>(dropped - 1);
  if (rest > half || (rest == half && (sticky || (kept & 1)))) kept++;
  return NativeMath.scalbn(<f64>kept, -1074);
}
