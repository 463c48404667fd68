// Arithmetic on number values, following OPA's topdown: integers stay exact (i64 here; the
// result falls back to f64 when it would overflow), anything else is computed in f64, and a
// result with an integral value is an integer again. Division by zero and modulo on
// non-integers are undefined (0), never a trap. Big integers (beyond i64) take part through
// their f64 approximation.

import { parseDecimal } from "./float-parse";
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

export function numberAdd(a: Value, b: Value): Value {
  if (bothInts(a, b)) {
    const x = intOf(a);
    const y = intOf(b);
    const r = x + y;
    if (((x ^ r) & (y ^ r)) >= 0) return intValue(r);
  }
  return numberFromF64(numberToF64(a) + numberToF64(b));
}

export function numberSubtract(a: Value, b: Value): Value {
  if (bothInts(a, b)) {
    const x = intOf(a);
    const y = intOf(b);
    const r = x - y;
    if (((x ^ y) & (x ^ r)) >= 0) return intValue(r);
  }
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
    return n.bits >= 0 ? a : n.bits != i64.MIN_VALUE ? intValue(-n.bits) : numberFromF64(-<f64>n.bits);
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
