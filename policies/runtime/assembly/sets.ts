// Set algebra by merging the sorted element lists: linear in the sizes of both sets.

import { Value, CollectionValue, newSet, compareValues } from "./value";

// @ts-ignore: decorator
@inline
function elementAt(s: CollectionValue, i: i32): Value {
  return load<Value>(s.items + (<usize>i << 2));
}

// Appends in order: callers produce elements ascending, so no search is needed.
// @ts-ignore: decorator
@inline
function push(out: CollectionValue, v: Value): void {
  store<Value>(out.items + (<usize>out.len << 2), v);
  out.len++;
}

export function setUnion(a: Value, b: Value): Value {
  const x = changetype<CollectionValue>(a);
  const y = changetype<CollectionValue>(b);
  const result = newSet(x.len + y.len);
  const out = changetype<CollectionValue>(result);
  let i = 0;
  let j = 0;
  while (i < x.len && j < y.len) {
    const c = compareValues(elementAt(x, i), elementAt(y, j));
    if (c <= 0) {
      push(out, elementAt(x, i++));
      if (c == 0) j++;
    } else {
      push(out, elementAt(y, j++));
    }
  }
  while (i < x.len) push(out, elementAt(x, i++));
  while (j < y.len) push(out, elementAt(y, j++));
  return result;
}

export function setIntersection(a: Value, b: Value): Value {
  const x = changetype<CollectionValue>(a);
  const y = changetype<CollectionValue>(b);
  const result = newSet(min(x.len, y.len));
  const out = changetype<CollectionValue>(result);
  let i = 0;
  let j = 0;
  while (i < x.len && j < y.len) {
    const c = compareValues(elementAt(x, i), elementAt(y, j));
    if (c < 0) i++;
    else if (c > 0) j++;
    else {
      push(out, elementAt(x, i++));
      j++;
    }
  }
  return result;
}

/** Elements of a that are not in b. */
export function setDifference(a: Value, b: Value): Value {
  const x = changetype<CollectionValue>(a);
  const y = changetype<CollectionValue>(b);
  const result = newSet(x.len);
  const out = changetype<CollectionValue>(result);
  let i = 0;
  let j = 0;
  while (i < x.len) {
    if (j >= y.len) {
      push(out, elementAt(x, i++));
      continue;
    }
    const c = compareValues(elementAt(x, i), elementAt(y, j));
    if (c < 0) push(out, elementAt(x, i++));
    else if (c > 0) j++;
    else {
      i++;
      j++;
    }
  }
  return result;
}
