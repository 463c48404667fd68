// bits.and, bits.or, bits.xor, bits.negate, bits.lsh, bits.rsh: two's-complement bitwise
// operations on integers, as Go's big.Int does them. Operands beyond the i64 range are undefined
// here (OPA takes any size); a left shift's result may be of any size.

import {
  Value, UNDEFINED, TYPE_NUMBER, NUMBER_INT,
  typeOf, numberKind, numberIntOf, intValue, numberMultiply,
} from "../value";

// @ts-ignore: decorator
@inline
function isInt(v: Value): bool {
  return typeOf(v) == TYPE_NUMBER && numberKind(v) == NUMBER_INT;
}

export function bi_bits_and(a: Value, b: Value): Value {
  return isInt(a) && isInt(b) ? intValue(numberIntOf(a) & numberIntOf(b)) : UNDEFINED;
}

export function bi_bits_or(a: Value, b: Value): Value {
  return isInt(a) && isInt(b) ? intValue(numberIntOf(a) | numberIntOf(b)) : UNDEFINED;
}

export function bi_bits_xor(a: Value, b: Value): Value {
  return isInt(a) && isInt(b) ? intValue(numberIntOf(a) ^ numberIntOf(b)) : UNDEFINED;
}

export function bi_bits_negate(a: Value): Value {
  return isInt(a) ? intValue(~numberIntOf(a)) : UNDEFINED;
}

/** The largest power of two a step of `bits.lsh` multiplies by, so each factor is an i64. */
const MAX_STEP: i64 = 62;

/** x · 2^s, growing beyond i64 as needed; undefined for a negative shift. */
export function bi_bits_lsh(x: Value, s: Value): Value {
  if (!isInt(x) || !isInt(s)) return UNDEFINED;
  let shift = numberIntOf(s);
  if (shift < 0) return UNDEFINED;
  let result = x;
  while (shift > 0) {
    const step = shift < MAX_STEP ? shift : MAX_STEP;
    result = numberMultiply(result, intValue(<i64>1 << step));
    shift -= step;
  }
  return result;
}

/** x · 2^-s rounded towards minus infinity (an arithmetic shift); undefined for a negative shift. */
export function bi_bits_rsh(x: Value, s: Value): Value {
  if (!isInt(x) || !isInt(s)) return UNDEFINED;
  const shift = numberIntOf(s);
  if (shift < 0) return UNDEFINED;
  return intValue(numberIntOf(x) >> (shift < 63 ? shift : 63));
}
