// is_string, is_number, is_boolean, is_array, is_object, is_set, is_null and type_name. The
// is_* builtins are false (not undefined) for a value of another type, as in OPA 1.x.

import {
  Value, UNDEFINED, TYPE_NULL, TYPE_BOOLEAN, TYPE_NUMBER, TYPE_STRING, TYPE_ARRAY, TYPE_OBJECT, TYPE_SET,
  StringValue, typeOf, booleanValue,
} from "../value";

// @ts-ignore: decorator
@inline
function isType(v: Value, tag: u8): Value {
  return v ? booleanValue(typeOf(v) == tag) : UNDEFINED;
}

export function bi_is_null(v: Value): Value {
  return isType(v, TYPE_NULL);
}

export function bi_is_boolean(v: Value): Value {
  return isType(v, TYPE_BOOLEAN);
}

export function bi_is_number(v: Value): Value {
  return isType(v, TYPE_NUMBER);
}

export function bi_is_string(v: Value): Value {
  return isType(v, TYPE_STRING);
}

export function bi_is_array(v: Value): Value {
  return isType(v, TYPE_ARRAY);
}

export function bi_is_object(v: Value): Value {
  return isType(v, TYPE_OBJECT);
}

export function bi_is_set(v: Value): Value {
  return isType(v, TYPE_SET);
}

// The names, indexed by type tag, as string values in static memory: type_name allocates nothing.
const NAME_TEXT = memory.data<u8>([
  0x6e, 0x75, 0x6c, 0x6c, // null
  0x62, 0x6f, 0x6f, 0x6c, 0x65, 0x61, 0x6e, // boolean
  0x6e, 0x75, 0x6d, 0x62, 0x65, 0x72, // number
  0x73, 0x74, 0x72, 0x69, 0x6e, 0x67, // string
  0x61, 0x72, 0x72, 0x61, 0x79, // array
  0x6f, 0x62, 0x6a, 0x65, 0x63, 0x74, // object
  0x73, 0x65, 0x74, // set
]);
const NAME_LENGTHS = memory.data<u8>([4, 7, 6, 6, 5, 6, 3]);
// @ts-ignore: decorator
@inline const NAME_VALUE_SIZE: usize = 16;
const NAME_VALUES = memory.data(7 * <i32>NAME_VALUE_SIZE, 8);
let nameOffset: usize = 0;
for (let i: usize = 0; i < 7; i++) {
  const s = changetype<StringValue>(NAME_VALUES + i * NAME_VALUE_SIZE);
  s.tag = TYPE_STRING;
  s.len = load<u8>(NAME_LENGTHS + i);
  s.data = NAME_TEXT + nameOffset;
  nameOffset += <usize>s.len;
}

export function bi_type_name(v: Value): Value {
  if (!v) return UNDEFINED;
  return NAME_VALUES + <usize>(typeOf(v) - TYPE_NULL) * NAME_VALUE_SIZE;
}
