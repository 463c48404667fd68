// union and intersection of a set of sets.

import { alloc } from "../heap";
import { setIntersection } from "../sets";
import { sortValues } from "../sort";
import {
  Value, UNDEFINED, compareValues, isSet, newSet, setAdd, setLength, setAt, collectionItems,
} from "../value";

/** Whether every element of the set is a set, as both builtins require. */
function allSets(sets: Value): bool {
  const n = setLength(sets);
  for (let i = 0; i < n; i++) if (!isSet(setAt(sets, i))) return false;
  return true;
}

export function bi_union(sets: Value): Value {
  if (!isSet(sets) || !allSets(sets)) return UNDEFINED;
  const n = setLength(sets);
  if (n == 1) return setAt(sets, 0);
  // All elements sorted together, then appended without their duplicates.
  let total = 0;
  for (let i = 0; i < n; i++) total += setLength(setAt(sets, i));
  const all = alloc(<usize>total << 2);
  let at = all;
  for (let i = 0; i < n; i++) {
    const s = setAt(sets, i);
    const bytes = <usize>setLength(s) << 2;
    memory.copy(at, collectionItems(s), bytes);
    at += bytes;
  }
  sortValues(all, total);
  const result = newSet(total);
  let previous: Value = UNDEFINED;
  for (let i = 0; i < total; i++) {
    const v = load<Value>(all + (<usize>i << 2));
    if (previous && compareValues(previous, v) == 0) continue;
    setAdd(result, v);
    previous = v;
  }
  return result;
}

export function bi_intersection(sets: Value): Value {
  if (!isSet(sets) || !allSets(sets)) return UNDEFINED;
  const n = setLength(sets);
  if (n == 0) return newSet(0);
  let result = setAt(sets, 0);
  for (let i = 1; i < n && setLength(result) > 0; i++) result = setIntersection(result, setAt(sets, i));
  return result;
}
