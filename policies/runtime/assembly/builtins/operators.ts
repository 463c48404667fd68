// Rego's infix operators. Operands of the wrong type make the result undefined (0), as in OPA
// without strict builtin errors.

import {
  Value, UNDEFINED, isNumber, isSet, booleanValue, compareValues, valuesEqual,
  numberAdd, numberSubtract, numberMultiply, numberDivide, numberRemainder,
  setUnion, setIntersection, setDifference,
} from "../value";

export function bi_plus(a: Value, b: Value): Value {
  return isNumber(a) && isNumber(b) ? numberAdd(a, b) : UNDEFINED;
}

/** Number subtraction, or set difference. */
export function bi_minus(a: Value, b: Value): Value {
  if (isNumber(a) && isNumber(b)) return numberSubtract(a, b);
  if (isSet(a) && isSet(b)) return setDifference(a, b);
  return UNDEFINED;
}

export function bi_mul(a: Value, b: Value): Value {
  return isNumber(a) && isNumber(b) ? numberMultiply(a, b) : UNDEFINED;
}

export function bi_div(a: Value, b: Value): Value {
  return isNumber(a) && isNumber(b) ? numberDivide(a, b) : UNDEFINED;
}

export function bi_rem(a: Value, b: Value): Value {
  return isNumber(a) && isNumber(b) ? numberRemainder(a, b) : UNDEFINED;
}

/** Set intersection `&`. */
export function bi_and(a: Value, b: Value): Value {
  return isSet(a) && isSet(b) ? setIntersection(a, b) : UNDEFINED;
}

/** Set union `|`. */
export function bi_or(a: Value, b: Value): Value {
  return isSet(a) && isSet(b) ? setUnion(a, b) : UNDEFINED;
}

export function bi_equal(a: Value, b: Value): Value {
  return a && b ? booleanValue(valuesEqual(a, b)) : UNDEFINED;
}

export function bi_neq(a: Value, b: Value): Value {
  return a && b ? booleanValue(!valuesEqual(a, b)) : UNDEFINED;
}

export function bi_lt(a: Value, b: Value): Value {
  return a && b ? booleanValue(compareValues(a, b) < 0) : UNDEFINED;
}

export function bi_lte(a: Value, b: Value): Value {
  return a && b ? booleanValue(compareValues(a, b) <= 0) : UNDEFINED;
}

export function bi_gt(a: Value, b: Value): Value {
  return a && b ? booleanValue(compareValues(a, b) > 0) : UNDEFINED;
}

export function bi_gte(a: Value, b: Value): Value {
  return a && b ? booleanValue(compareValues(a, b) >= 0) : UNDEFINED;
}
