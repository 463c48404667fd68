// array.concat, array.flatten, array.slice and array.reverse.

import {
  Value, UNDEFINED, TYPE_NUMBER, NUMBER_INT,
  typeOf, isArray, numberKind, numberIntOf, newArray, arrayLength, arrayGet, arrayAppend,
} from "../value";

/** Appends the elements of the array `from` to `to`. */
function appendAll(to: Value, from: Value): void {
  const n = arrayLength(from);
  for (let i = 0; i < n; i++) arrayAppend(to, arrayGet(from, i));
}

export function bi_array_concat(a: Value, b: Value): Value {
  if (!isArray(a) || !isArray(b)) return UNDEFINED;
  const result = newArray(arrayLength(a) + arrayLength(b));
  appendAll(result, a);
  appendAll(result, b);
  return result;
}

/**
 * The elements of the array in order, those that are arrays replaced by their own elements: one
 * level only, as OPA flattens (`[[1, [2]], 3]` gives `[1, [2], 3]`).
 */
export function bi_array_flatten(array: Value): Value {
  if (!isArray(array)) return UNDEFINED;
  const n = arrayLength(array);
  const result = newArray(n);
  for (let i = 0; i < n; i++) {
    const element = arrayGet(array, i);
    if (isArray(element)) appendAll(result, element);
    else arrayAppend(result, element);
  }
  return result;
}

/**
 * Elements [start, stop), with both indexes clamped into the array (so an out-of-range slice is
 * empty, never undefined); the indexes must be integers.
 */
export function bi_array_slice(array: Value, start: Value, stop: Value): Value {
  if (!isArray(array)) return UNDEFINED;
  if (typeOf(start) != TYPE_NUMBER || numberKind(start) != NUMBER_INT) return UNDEFINED;
  if (typeOf(stop) != TYPE_NUMBER || numberKind(stop) != NUMBER_INT) return UNDEFINED;
  const n = <i64>arrayLength(array);
  let to = numberIntOf(stop);
  if (to < 0) to = 0;
  else if (to > n) to = n;
  let from = numberIntOf(start);
  if (from < 0) from = 0;
  else if (from > to) from = to;
  const result = newArray(<i32>(to - from));
  for (let i = <i32>from; i < <i32>to; i++) arrayAppend(result, arrayGet(array, i));
  return result;
}

export function bi_array_reverse(array: Value): Value {
  if (!isArray(array)) return UNDEFINED;
  const n = arrayLength(array);
  const result = newArray(n);
  for (let i = n - 1; i >= 0; i--) arrayAppend(result, arrayGet(array, i));
  return result;
}
