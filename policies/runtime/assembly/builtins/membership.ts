// `x in xs` and `k, v in xs`, which the planner lowers to internal.member_2/3.

import {
  Value, UNDEFINED, TYPE_ARRAY, TYPE_OBJECT, TYPE_SET, FALSE_VALUE,
  typeOf, booleanValue, valuesEqual, setContains, getMember,
  collectionLength, collectionItems, objectValueAt,
} from "../value";

/** Whether x is an element of an array or set, or a value of an object; false for scalars. */
export function bi_internal_member_2(x: Value, collection: Value): Value {
  if (!x) return UNDEFINED;
  switch (typeOf(collection)) {
    case TYPE_SET:
      return booleanValue(setContains(collection, x));
    case TYPE_ARRAY: {
      const items = collectionItems(collection);
      const n = collectionLength(collection);
      for (let i = 0; i < n; i++) {
        if (valuesEqual(load<Value>(items + (<usize>i << 2)), x)) return booleanValue(true);
      }
      return FALSE_VALUE;
    }
    case TYPE_OBJECT: {
      const n = collectionLength(collection);
      for (let i = 0; i < n; i++) {
        if (valuesEqual(objectValueAt(collection, i), x)) return booleanValue(true);
      }
      return FALSE_VALUE;
    }
  }
  return FALSE_VALUE;
}

/** Whether collection[key] is v (for a set: key is an element and equals v). */
export function bi_internal_member_3(key: Value, v: Value, collection: Value): Value {
  if (!key || !v) return UNDEFINED;
  const actual = getMember(collection, key);
  return booleanValue(actual != UNDEFINED && valuesEqual(actual, v));
}
