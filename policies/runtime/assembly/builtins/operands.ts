// Operand checks shared by builtins of several families.

import { Value, TYPE_NUMBER, NUMBER_INT, typeOf, numberKind } from "../value";

/** An integer operand as OPA's IntOperand takes it: written (or computed) as an integer. */
// @ts-ignore: decorator
@inline
export function isIntOperand(v: Value): bool {
  return typeOf(v) == TYPE_NUMBER && numberKind(v) == NUMBER_INT;
}
