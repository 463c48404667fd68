// The Rego text of a value, as OPA's `Term.String()` writes it: strings double-quoted with Go's
// escaping, arrays `[1, "a"]`, objects `{"k": 1}` and sets `{1, 2}` with ", " between items
// (objects and sets in value order), and the empty set as `set()`. sprintf prints every operand
// that is not a string or a number this way.

import {
  Value, TYPE_NULL, TYPE_BOOLEAN, TYPE_NUMBER, TYPE_STRING, TYPE_ARRAY, TYPE_OBJECT,
  typeOf, booleanOf, stringData, stringLength, collectionLength, collectionItems,
  objectKeyAt, objectValueAt, writeNumber,
} from "../value";
import { appendQuoted } from "./go-quote";
import { TextBuffer } from "./text-buffer";

export function appendRegoText(out: TextBuffer, v: Value): void {
  switch (typeOf(v)) {
    case TYPE_NULL:
      out.ascii("null");
      return;
    case TYPE_BOOLEAN:
      out.ascii(booleanOf(v) ? "true" : "false");
      return;
    case TYPE_NUMBER:
      writeNumber(out, v);
      return;
    case TYPE_STRING:
      appendQuoted(out, stringData(v), stringLength(v), false);
      return;
    case TYPE_OBJECT: {
      const n = collectionLength(v);
      out.byte(0x7b);
      for (let i = 0; i < n; i++) {
        if (i > 0) out.ascii(", ");
        appendRegoText(out, objectKeyAt(v, i));
        out.ascii(": ");
        appendRegoText(out, objectValueAt(v, i));
      }
      out.byte(0x7d);
      return;
    }
  }
  // Arrays and sets.
  const isArray = typeOf(v) == TYPE_ARRAY;
  const n = collectionLength(v);
  if (!isArray && n == 0) {
    out.ascii("set()");
    return;
  }
  const items = collectionItems(v);
  out.byte(isArray ? 0x5b : 0x7b);
  for (let i = 0; i < n; i++) {
    if (i > 0) out.ascii(", ");
    appendRegoText(out, load<Value>(items + (<usize>i << 2)));
  }
  out.byte(isArray ? 0x5d : 0x7d);
}
