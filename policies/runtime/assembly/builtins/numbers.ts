// Number builtins: abs, round, ceil, floor, numbers.range, numbers.range_step, to_number, format_int.

import { abortWithMessage } from "../abort";
import { ByteBuffer } from "../buffer";
import {
  Value, UNDEFINED, TYPE_NULL, TYPE_BOOLEAN, TYPE_NUMBER, TYPE_STRING, NUMBER_BIG, NumberValue,
  typeOf, isNumber, booleanOf, intValue, stringValue, stringData, stringLength, newArray, arrayAppend,
  numberAbs, numberRound, numberCeil, numberFloor, numberIsI64, numberToI64, numberToF64, parseNumberText,
} from "../value";

export function bi_abs(v: Value): Value {
  return isNumber(v) ? numberAbs(v) : UNDEFINED;
}

export function bi_round(v: Value): Value {
  return isNumber(v) ? numberRound(v) : UNDEFINED;
}

export function bi_ceil(v: Value): Value {
  return isNumber(v) ? numberCeil(v) : UNDEFINED;
}

export function bi_floor(v: Value): Value {
  return isNumber(v) ? numberFloor(v) : UNDEFINED;
}

/**
 * The most elements `numbers.range` builds. A larger range is an abort, not undefined: the
 * policy fails closed at once instead of spending the event loop filling its memory (building
 * 5e7 integers took 1.6 s before the memory cap stopped it), and undefined could make a `not`
 * succeed. The engine reads the `size budget: ` prefix (policies/engine/policy-instance.ts).
 */
// @ts-ignore: decorator
@inline const RANGE_MAX_ELEMENTS: u64 = 100000;

/** The integers from a to b inclusive, descending when b < a; both must be integers. */
export function bi_numbers_range(a: Value, b: Value): Value {
  return integerRange(a, b, intValue(1), "size budget: numbers.range builds at most 100000 elements");
}

/**
 * The integers from a toward b, `step` apart, that do not pass b (descending when b < a); all
 * three must be integers and the step positive.
 */
export function bi_numbers_range_step(a: Value, b: Value, step: Value): Value {
  return integerRange(a, b, step, "size budget: numbers.range_step builds at most 100000 elements");
}

/** The range of `numbers.range` and `numbers.range_step`, aborting with `tooLarge` past the size budget. */
function integerRange(a: Value, b: Value, step: Value, tooLarge: string): Value {
  if (!isI64Operand(a) || !isI64Operand(b) || !isI64Operand(step)) return UNDEFINED;
  const from = numberToI64(a);
  const to = numberToI64(b);
  const stride = numberToI64(step);
  if (stride <= 0) return UNDEFINED;
  // As u64, so that the span of i64.MIN_VALUE to i64.MAX_VALUE does not wrap below the limit.
  const span: u64 = from <= to ? <u64>(to - from) : <u64>(from - to);
  const steps = span / <u64>stride;
  if (steps >= RANGE_MAX_ELEMENTS) abortWithMessage(tooLarge);
  const n = <i32>steps + 1;
  const delta: i64 = from <= to ? stride : -stride;
  const result = newArray(n);
  let x = from;
  for (let i = 0; i < n; i++) {
    arrayAppend(result, intValue(x));
    x += delta;
  }
  return result;
}

/** A number with an integer value within the 64-bit range (OPA's BigIntOperand, bounded). */
// @ts-ignore: decorator
@inline
function isI64Operand(v: Value): bool {
  return isNumber(v) && numberIsI64(v);
}

export function bi_to_number(v: Value): Value {
  switch (typeOf(v)) {
    case TYPE_NULL: return intValue(0);
    case TYPE_BOOLEAN: return intValue(booleanOf(v) ? 1 : 0);
    case TYPE_NUMBER: return v;
    case TYPE_STRING: return parseNumberText(stringData(v), stringLength(v));
  }
  return UNDEFINED;
}

const DIGITS = memory.data<u8>([0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66]);

/** The number, truncated toward zero, in base 2, 8, 10 or 16 (lowercase digits). */
export function bi_format_int(v: Value, base: Value): Value {
  if (!isNumber(v) || !isNumber(base) || !numberIsI64(base)) return UNDEFINED;
  const radix = numberToI64(base);
  if (radix != 2 && radix != 8 && radix != 10 && radix != 16) return UNDEFINED;
  const n = changetype<NumberValue>(v);
  if (n.kind == NUMBER_BIG) return radix == 10 ? stringValue(n.text, n.textLen) : UNDEFINED;
  const f = numberToF64(v);
  if (!numberIsI64(v) && !(Math.abs(f) < 9223372036854775808.0)) return UNDEFINED;
  const i = numberIsI64(v) ? numberToI64(v) : <i64>Math.trunc(f);
  // The magnitude as u64 also covers i64.MIN_VALUE.
  let m: u64 = i < 0 ? <u64>(-i) : <u64>i;
  const out = ByteBuffer.create(65);
  const end = out.data + 65;
  let p = end;
  do {
    p--;
    store<u8>(p, load<u8>(DIGITS + <usize>(m % <u64>radix)));
    m /= <u64>radix;
  } while (m);
  if (i < 0) store<u8>(--p, 0x2d);
  return stringValue(p, <i32>(end - p));
}
