// `with input.a.b as v`: the document with the value at a path replaced.

import {
  Value, UNDEFINED, isArray, isObject, arrayLength, arrayGet,
  newObject, objectGet, objectInsert, shallowCopy,
} from "../value";

/**
 * A copy of doc with the value at path (an array of keys) set to v. Objects along the path are
 * copied, never modified; a missing or non-object step becomes a new object, as OPA's `with`
 * does. An empty path replaces the whole document.
 */
export function bi_internal_upsert(doc: Value, path: Value, v: Value): Value {
  if (!isArray(path) || !v) return UNDEFINED;
  return upsertFrom(doc, path, 0, v);
}

function upsertFrom(doc: Value, path: Value, i: i32, v: Value): Value {
  if (i == arrayLength(path)) return v;
  const key = arrayGet(path, i);
  const isObj = isObject(doc);
  const copy = isObj ? shallowCopy(doc) : newObject(1);
  const child = isObj ? objectGet(doc, key) : UNDEFINED;
  objectInsert(copy, key, upsertFrom(child, path, i + 1, v));
  return copy;
}
