// Arithmetic on number values, following OPA's topdown: integers stay exact, anything else is
// computed in f64, and a result with an integral value is an integer again. Division by zero
// and modulo on non-integers are undefined (0), never a trap.
//
// OPA adds, subtracts and multiplies integers with Go's big.Int, so these do too when both
// operands are integers (NUMBER_INT or NUMBER_BIG): i64 arithmetic while it does not overflow,
// else a signed multi-precision computation (bignum.ts) whose result is an i64 again when it
// fits and otherwise a NUMBER_BIG with its exact decimal text. Division and `%` keep to i64 and
// f64, as exact results would need long division by a multi-precision divisor: `/` takes a big
// integer through its f64 approximation, and `%` is undefined unless both operands fit an i64.

import {
  bigAlloc, bigLimbCount, bigSet, bigSetDecimal, bigLimbsForDigits, bigBitLength, bigLow64,
  bigCompare, bigAdd, bigSubtract, bigMultiply, bigDecimalBound, bigWriteDecimal,
} from "./bignum";
import { parseDecimal } from "./float-parse";
import { alloc } from "./heap";
import {
  Value, UNDEFINED, NUMBER_INT, NUMBER_FLOAT, NUMBER_BIG, NumberValue,
  intValue, floatValue, bigIntegerValue, numberToF64, numberIsI64, numberToI64, parseJSON, isNumber,
} from "./value";

// @ts-ignore: decorator
@inline const MAX_SAFE_INTEGER: f64 = 9007199254740992.0;

/** The number for an f64 result: undefined if not finite, an integer if integral and exact. */
export function numberFromF64(f: f64): Value {
  if (!isFinite(f)) return UNDEFINED;
  if (f == Math.trunc(f) && Math.abs(f) <= MAX_SAFE_INTEGER) return intValue(<i64>f);
  return floatValue(f);
}

// @ts-ignore: decorator
@inline
function bothInts(a: Value, b: Value): bool {
  return (changetype<NumberValue>(a).kind | changetype<NumberValue>(b).kind) == NUMBER_INT;
}

// @ts-ignore: decorator
@inline
function intOf(v: Value): i64 {
  return changetype<NumberValue>(v).bits;
}

// ---------------------------------------------------------------------------------------------
// Integers beyond i64, as a sign and a magnitude. Magnitudes are scratch big integers on the
// heap, which the host frees with everything else an evaluation allocated.

/** Both are integers, whether held as i64 or as big integer text. */
// @ts-ignore: decorator
@inline
function bothIntegers(a: Value, b: Value): bool {
  return changetype<NumberValue>(a).kind != NUMBER_FLOAT && changetype<NumberValue>(b).kind != NUMBER_FLOAT;
}

function isNegative(v: Value): bool {
  const n = changetype<NumberValue>(v);
  return n.kind == NUMBER_INT ? n.bits < 0 : load<u8>(n.text) == 0x2d;
}

/** The magnitude of an integer as a fresh big integer. */
function magnitudeOf(v: Value): usize {
  const n = changetype<NumberValue>(v);
  if (n.kind == NUMBER_INT) {
    const a = bigAlloc(2);
    // Negating i64.MIN wraps to itself, whose u64 is its magnitude, 2^63.
    bigSet(a, <u64>(n.bits < 0 ? -n.bits : n.bits));
    return a;
  }
  const sign = <i32>(load<u8>(n.text) == 0x2d);
  const digits = n.textLen - sign;
  const a = bigAlloc(bigLimbsForDigits(digits));
  bigSetDecimal(a, n.text + <usize>sign, digits);
  return a;
}

/**
 * The number for an exact integer: an i64 when it fits, else a big integer (which, as one
 * parsed from JSON, is never within i64: comparisons rely on that). Consumes the magnitude.
 */
function integerResult(magnitude: usize, negative: bool): Value {
  if (bigBitLength(magnitude) <= 64) {
    const m = bigLow64(magnitude);
    if (m <= <u64>i64.MAX_VALUE) return intValue(negative ? -<i64>m : <i64>m);
    if (negative && m == <u64>i64.MIN_VALUE) return intValue(i64.MIN_VALUE);
  }
  const size = bigDecimalBound(magnitude) + 1;
  const end = alloc(<usize>size) + <usize>size;
  let start = bigWriteDecimal(magnitude, end);
  if (negative) store<u8>(--start, 0x2d);
  const len = <i32>(end - start);
  return bigIntegerValue(start, len, parseDecimal(start, len));
}

/** a + b, or a - b when `negateB`, for integers. */
function addIntegers(a: Value, b: Value, negateB: bool): Value {
  const x = magnitudeOf(a);
  const y = magnitudeOf(b);
  const xNegative = isNegative(a);
  const yNegative = isNegative(b) != negateB;
  if (xNegative == yNegative) {
    const sum = bigAlloc(max(bigLimbCount(x), bigLimbCount(y)) + 1);
    bigAdd(sum, x, y);
    return integerResult(sum, xNegative);
  }
  // Opposite signs: the larger magnitude less the smaller, with the larger one's sign.
  if (bigCompare(x, y) >= 0) {
    bigSubtract(x, y);
    return integerResult(x, xNegative);
  }
  bigSubtract(y, x);
  return integerResult(y, yNegative);
}

export function numberAdd(a: Value, b: Value): Value {
  if (bothInts(a, b)) {
    const x = intOf(a);
    const y = intOf(b);
    const r = x + y;
    if (((x ^ r) & (y ^ r)) >= 0) return intValue(r);
  }
  if (bothIntegers(a, b)) return addIntegers(a, b, false);
  return numberFromF64(numberToF64(a) + numberToF64(b));
}

export function numberSubtract(a: Value, b: Value): Value {
  if (bothInts(a, b)) {
    const x = intOf(a);
    const y = intOf(b);
    const r = x - y;
    if (((x ^ y) & (x ^ r)) >= 0) return intValue(r);
  }
  if (bothIntegers(a, b)) return addIntegers(a, b, true);
  return numberFromF64(numberToF64(a) - numberToF64(b));
}

export function numberMultiply(a: Value, b: Value): Value {
  if (bothInts(a, b)) {
    const x = intOf(a);
    const y = intOf(b);
    if (x == 0 || y == 0) return intValue(0);
    const r = x * y;
    // i64.MIN / -1 would trap, so -1 is checked on its own.
    const exact = y == -1 ? x != i64.MIN_VALUE : r / y == x;
    if (exact) return intValue(r);
  }
  if (bothIntegers(a, b)) {
    const x = magnitudeOf(a);
    const y = magnitudeOf(b);
    const product = bigAlloc(bigLimbCount(x) + bigLimbCount(y));
    bigMultiply(product, x, y);
    return integerResult(product, isNegative(a) != isNegative(b));
  }
  return numberFromF64(numberToF64(a) * numberToF64(b));
}

export function numberDivide(a: Value, b: Value): Value {
  const divisor = numberToF64(b);
  if (divisor == 0) return UNDEFINED;
  if (bothInts(a, b)) {
    const x = intOf(a);
    const y = intOf(b);
    if (y == -1) {
      if (x != i64.MIN_VALUE) return intValue(-x);
    } else if (x % y == 0) {
      return intValue(x / y);
    }
  }
  return numberFromF64(numberToF64(a) / divisor);
}

/** Remainder with the sign of the dividend; integers only (3.0 counts), as in OPA. */
export function numberRemainder(a: Value, b: Value): Value {
  if (!numberIsI64(a) || !numberIsI64(b)) return UNDEFINED;
  const y = numberToI64(b);
  if (y == 0) return UNDEFINED;
  // i64.rem_s does not trap on i64.MIN % -1 (it is 0).
  return intValue(numberToI64(a) % y);
}

export function numberAbs(a: Value): Value {
  const n = changetype<NumberValue>(a);
  if (n.kind == NUMBER_INT) {
    if (n.bits >= 0) return a;
    return n.bits != i64.MIN_VALUE ? intValue(-n.bits) : integerResult(magnitudeOf(a), false);
  }
  if (n.kind == NUMBER_BIG) {
    if (load<u8>(n.text) != 0x2d) return a;
    return bigIntegerValue(n.text + 1, n.textLen - 1, -reinterpret<f64>(n.bits));
  }
  return numberFromF64(Math.abs(reinterpret<f64>(n.bits)));
}

/** Rounds half away from zero, as OPA's round does. */
export function numberRound(a: Value): Value {
  if (changetype<NumberValue>(a).kind != NUMBER_FLOAT) return a;
  const f = numberToF64(a);
  const t = Math.trunc(f);
  // f - t is exact, unlike f + 0.5.
  if (Math.abs(f - t) >= 0.5) return numberFromF64(t + (f < 0 ? -1.0 : 1.0));
  return numberFromF64(t);
}

export function numberCeil(a: Value): Value {
  if (changetype<NumberValue>(a).kind != NUMBER_FLOAT) return a;
  return numberFromF64(Math.ceil(numberToF64(a)));
}

export function numberFloor(a: Value): Value {
  if (changetype<NumberValue>(a).kind != NUMBER_FLOAT) return a;
  return numberFromF64(Math.floor(numberToF64(a)));
}

/**
 * The number written in a string, as Go's strconv.ParseFloat accepts decimal numbers: an
 * optional sign, digits with an optional point, an optional exponent. 0 if it is not one.
 */
export function parseNumberText(ptr: usize, len: i32): Value {
  if (!isDecimalSyntax(ptr, len)) return UNDEFINED;
  // JSON numbers (the common case) keep their exact integer form.
  const strict = parseJSON(ptr, len);
  if (strict && isNumber(strict)) return strict;
  const f = parseDecimal(ptr, len);
  return isFinite(f) ? floatValue(f) : UNDEFINED;
}

function isDecimalSyntax(ptr: usize, len: i32): bool {
  let p = ptr;
  const end = ptr + <usize>len;
  if (p < end && (load<u8>(p) == 0x2b || load<u8>(p) == 0x2d)) p++;
  let digits = 0;
  while (p < end && <u32>(load<u8>(p) - 0x30) <= 9) { p++; digits++; }
  if (p < end && load<u8>(p) == 0x2e) {
    p++;
    while (p < end && <u32>(load<u8>(p) - 0x30) <= 9) { p++; digits++; }
  }
  if (digits == 0) return false;
  if (p < end && (load<u8>(p) | 0x20) == 0x65) {
    p++;
    if (p < end && (load<u8>(p) == 0x2b || load<u8>(p) == 0x2d)) p++;
    const exponentStart = p;
    while (p < end && <u32>(load<u8>(p) - 0x30) <= 9) p++;
    if (p == exponentStart) return false;
  }
  return p == end;
}
