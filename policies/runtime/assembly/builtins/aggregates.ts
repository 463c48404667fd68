// Aggregates over collections: count, sum, product, max, min, sort.

import {
  Value, UNDEFINED, TYPE_STRING, TYPE_ARRAY, TYPE_SET,
  typeOf, intValue, isNumber, collectionLength, collectionItems, stringData, stringLength,
  newArray, compareValues, numberAdd, numberMultiply, sortValues, CollectionValue,
} from "../value";
import { runeCount } from "./utf8";

export function bi_count(v: Value): Value {
  const tag = typeOf(v);
  if (tag == TYPE_STRING) return intValue(runeCount(stringData(v), stringLength(v)));
  if (tag >= TYPE_ARRAY) return intValue(collectionLength(v));
  return UNDEFINED;
}

// Arrays and sets keep their elements as a flat list; objects are not aggregated.
// @ts-ignore: decorator
@inline
function isList(v: Value): bool {
  const tag = typeOf(v);
  return tag == TYPE_ARRAY || tag == TYPE_SET;
}

export function bi_sum(v: Value): Value {
  return foldNumbers(v, intValue(0), numberAdd);
}

export function bi_product(v: Value): Value {
  return foldNumbers(v, intValue(1), numberMultiply);
}

/**
 * The numbers of an array or set combined in order by `op`, starting from `start`; undefined when
 * an element is not a number or `op` gives up (a result too large to hold).
 */
function foldNumbers(v: Value, start: Value, op: (a: Value, b: Value) => Value): Value {
  if (!isList(v)) return UNDEFINED;
  const items = collectionItems(v);
  const n = collectionLength(v);
  let total = start;
  for (let i = 0; i < n; i++) {
    const x = load<Value>(items + (<usize>i << 2));
    if (!isNumber(x)) return UNDEFINED;
    total = op(total, x);
    if (!total) return UNDEFINED;
  }
  return total;
}

/** The greatest element in value order; undefined for an empty collection. */
export function bi_max(v: Value): Value {
  if (!isList(v) || collectionLength(v) == 0) return UNDEFINED;
  return extreme(v, 1);
}

export function bi_min(v: Value): Value {
  if (!isList(v) || collectionLength(v) == 0) return UNDEFINED;
  return extreme(v, -1);
}

// Sets are sorted: their extremes are at the ends.
function extreme(v: Value, direction: i32): Value {
  const items = collectionItems(v);
  const n = collectionLength(v);
  if (typeOf(v) == TYPE_SET) return load<Value>(items + (direction > 0 ? <usize>(n - 1) << 2 : 0));
  let best = load<Value>(items);
  for (let i = 1; i < n; i++) {
    const x = load<Value>(items + (<usize>i << 2));
    if (compareValues(x, best) * direction > 0) best = x;
  }
  return best;
}

/** A sorted array of the elements of an array or set. */
export function bi_sort(v: Value): Value {
  if (!isList(v)) return UNDEFINED;
  const n = collectionLength(v);
  const result = newArray(n);
  const out = changetype<CollectionValue>(result);
  memory.copy(out.items, collectionItems(v), <usize>n << 2);
  out.len = n;
  if (typeOf(v) == TYPE_ARRAY) sortValues(out.items, n);
  return result;
}
