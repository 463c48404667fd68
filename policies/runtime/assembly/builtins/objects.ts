// object.get, object.keys, object.union, object.union_n, object.remove, object.filter, object.subset.

import {
  Value, UNDEFINED, TYPE_ARRAY, TYPE_OBJECT, TYPE_SET, TYPE_NUMBER, NUMBER_INT,
  typeOf, isObject, isArray, isSet, numberKind, numberIntOf, compareValues, valuesEqual, booleanValue,
  arrayLength, arrayGet, newObject, objectLength, objectKeyAt, objectValueAt, objectGet, objectInsert,
  newSet, setLength, setAt, setAdd, setContains,
} from "../value";

/** One step of a path: an object's value, an array's element, or a set's member itself. */
function step(v: Value, key: Value): Value {
  switch (typeOf(v)) {
    case TYPE_OBJECT:
      return objectGet(v, key);
    case TYPE_ARRAY: {
      // As OPA's Array.Find: the index must be an integer number within bounds.
      if (typeOf(key) != TYPE_NUMBER || numberKind(key) != NUMBER_INT) return UNDEFINED;
      const i = numberIntOf(key);
      return i >= 0 && i < <i64>arrayLength(v) ? arrayGet(v, <i32>i) : UNDEFINED;
    }
    case TYPE_SET:
      return setContains(v, key) ? key : UNDEFINED;
  }
  return UNDEFINED;
}

/**
 * object[key], or the fallback when absent. An array key is a path walked through nested
 * objects, arrays and sets; the empty path gives the object itself.
 */
export function bi_object_get(object: Value, key: Value, fallback: Value): Value {
  if (!isObject(object) || !key || !fallback) return UNDEFINED;
  if (!isArray(key)) {
    const v = objectGet(object, key);
    return v ? v : fallback;
  }
  let current = object;
  const n = arrayLength(key);
  for (let i = 0; i < n; i++) {
    current = step(current, arrayGet(key, i));
    if (!current) return fallback;
  }
  return current;
}

export function bi_object_keys(object: Value): Value {
  if (!isObject(object)) return UNDEFINED;
  const n = objectLength(object);
  const keys = newSet(n);
  // Keys are in value order already, so each one is appended.
  for (let i = 0; i < n; i++) setAdd(keys, objectKeyAt(object, i));
  return keys;
}

/** a and b merged: b's value wins, except that two objects under one key are merged in turn. */
function merge(a: Value, b: Value): Value {
  const na = objectLength(a);
  const nb = objectLength(b);
  const result = newObject(na + nb);
  let i = 0;
  let j = 0;
  while (i < na && j < nb) {
    const ka = objectKeyAt(a, i);
    const kb = objectKeyAt(b, j);
    const c = compareValues(ka, kb);
    if (c < 0) {
      objectInsert(result, ka, objectValueAt(a, i++));
    } else if (c > 0) {
      objectInsert(result, kb, objectValueAt(b, j++));
    } else {
      const va = objectValueAt(a, i++);
      const vb = objectValueAt(b, j++);
      objectInsert(result, ka, isObject(va) && isObject(vb) ? merge(va, vb) : vb);
    }
  }
  for (; i < na; i++) objectInsert(result, objectKeyAt(a, i), objectValueAt(a, i));
  for (; j < nb; j++) objectInsert(result, objectKeyAt(b, j), objectValueAt(b, j));
  return result;
}

export function bi_object_union(a: Value, b: Value): Value {
  if (!isObject(a) || !isObject(b)) return UNDEFINED;
  return merge(a, b);
}

/** The objects of an array merged in turn as `object.union` merges two; `{}` for none. */
export function bi_object_union_n(objects: Value): Value {
  if (!isArray(objects)) return UNDEFINED;
  const n = arrayLength(objects);
  if (n == 0) return newObject(0);
  let result = arrayGet(objects, 0);
  if (!isObject(result)) return UNDEFINED;
  for (let i = 1; i < n; i++) {
    const next = arrayGet(objects, i);
    if (!isObject(next)) return UNDEFINED;
    result = merge(result, next);
  }
  return result;
}

/**
 * The members of the object whose keys are (`keep`) or are not among the given keys, which come
 * as an array, a set, or an object's keys.
 */
function selectKeys(object: Value, keys: Value, keep: bool): Value {
  if (!isObject(object)) return UNDEFINED;
  const keysTag = typeOf(keys);
  let listed = keys;
  if (keysTag == TYPE_ARRAY) {
    const k = arrayLength(keys);
    listed = newSet(k);
    for (let i = 0; i < k; i++) setAdd(listed, arrayGet(keys, i));
  } else if (keysTag != TYPE_SET && keysTag != TYPE_OBJECT) {
    return UNDEFINED;
  }
  const n = objectLength(object);
  const result = newObject(n);
  for (let i = 0; i < n; i++) {
    const key = objectKeyAt(object, i);
    const found = keysTag == TYPE_OBJECT ? objectGet(listed, key) != UNDEFINED : setContains(listed, key);
    if (found == keep) objectInsert(result, key, objectValueAt(object, i));
  }
  return result;
}

export function bi_object_remove(object: Value, keys: Value): Value {
  return selectKeys(object, keys, false);
}

export function bi_object_filter(object: Value, keys: Value): Value {
  return selectKeys(object, keys, true);
}

/** Every member of `sub` is in `super`, or, for a pair of objects, sets or arrays, a subset of its value. */
function objectSubset(sup: Value, sub: Value): bool {
  const n = objectLength(sub);
  for (let i = 0; i < n; i++) {
    const supValue = objectGet(sup, objectKeyAt(sub, i));
    if (!supValue) return false;
    const subValue = objectValueAt(sub, i);
    if (valuesEqual(supValue, subValue)) continue;
    const tag = typeOf(subValue);
    if (typeOf(supValue) != tag) return false;
    if (tag == TYPE_OBJECT) {
      if (!objectSubset(supValue, subValue)) return false;
    } else if (tag == TYPE_SET) {
      if (!setSubset(supValue, subValue)) return false;
    } else if (tag != TYPE_ARRAY || !arraySubset(supValue, subValue)) {
      return false;
    }
  }
  return true;
}

function setSubset(sup: Value, sub: Value): bool {
  for (let i = 0; i < setLength(sub); i++) if (!setContains(sup, setAt(sub, i))) return false;
  return true;
}

/** `sub` appears in `sup` as a run of consecutive elements. */
function arraySubset(sup: Value, sub: Value): bool {
  const n = arrayLength(sup);
  const m = arrayLength(sub);
  for (let start = 0; start + m <= n; start++) {
    let j = 0;
    while (j < m && valuesEqual(arrayGet(sup, start + j), arrayGet(sub, j))) j++;
    if (j == m) return true;
  }
  return false;
}

/**
 * Whether the set's members all occur in the array. As OPA counts them, an array element found in
 * the set counts once per occurrence, and an empty array holds no set, not even the empty one.
 */
function arraySetSubset(sup: Value, sub: Value): bool {
  let unmatched = setLength(sub);
  for (let i = 0; i < arrayLength(sup); i++) {
    if (setContains(sub, arrayGet(sup, i))) unmatched--;
    if (unmatched == 0) return true;
  }
  return false;
}

export function bi_object_subset(sup: Value, sub: Value): Value {
  if (isObject(sup) && isObject(sub)) return booleanValue(objectSubset(sup, sub));
  if (isSet(sup) && isSet(sub)) return booleanValue(setSubset(sup, sub));
  if (isArray(sup) && isArray(sub)) return booleanValue(arraySubset(sup, sub));
  if (isArray(sup) && isSet(sub)) return booleanValue(arraySetSubset(sup, sub));
  return UNDEFINED;
}
