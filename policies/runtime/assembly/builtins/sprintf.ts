// sprintf(format, values): Go's fmt.Sprintf over the operands OPA hands it. Like OPA, an
// integer within 64 bits is an `int`, a larger integer a `*big.Int`, any other number a
// `float64`, a string itself, and every other value its Rego text (so `%v` of a set prints
// `{1, 2}` and `%d` of `true` prints `%!d(string=true)`).

import {
  Value, UNDEFINED, TYPE_NUMBER, TYPE_STRING, NUMBER_INT, NUMBER_FLOAT, NumberValue,
  typeOf, isString, isArray, stringData, stringLength, arrayLength, arrayGet,
} from "../value";
import {
  beginOperands, addIntOperand, addFloatOperand, addStringOperand, addScratchOperand,
  addBigIntOperand, formatGo,
} from "./go-printf";
import { appendRegoText } from "./rego-text";
import { output, scratch } from "./text-buffer";

export function bi_sprintf(format: Value, values: Value): Value {
  if (!isString(format) || !isArray(values)) return UNDEFINED;
  beginOperands();
  scratch.begin();
  const n = arrayLength(values);
  for (let i = 0; i < n; i++) {
    const v = arrayGet(values, i);
    const tag = typeOf(v);
    if (tag == TYPE_STRING) {
      addStringOperand(stringData(v), stringLength(v));
    } else if (tag == TYPE_NUMBER) {
      const number = changetype<NumberValue>(v);
      if (number.kind == NUMBER_INT) {
        addIntOperand(number.bits);
      } else if (number.kind == NUMBER_FLOAT) {
        addFloatOperand(reinterpret<f64>(number.bits));
      } else {
        const negative = load<u8>(number.text) == 0x2d;
        const skip = negative ? 1 : 0;
        addBigIntOperand(number.text + <usize>skip, number.textLen - skip, negative);
      }
    } else {
      const offset = scratch.len;
      appendRegoText(scratch, v);
      addScratchOperand(offset, scratch.len - offset);
    }
  }
  output.begin();
  formatGo(output, stringData(format), stringLength(format));
  return output.toStringCopy();
}
