// The functions generated policy code calls (`rt_*` in compiler/emit/runtime-abi.ts). Booleans
// are returned as 1 or 0, values as pointers with 0 for undefined.

import { abortWithBytes, abortWithMessage } from "./abort";
import { bi_count } from "./builtins/aggregates";
import { resultSetAdd } from "./result-set";
import {
  Value, UNDEFINED, TYPE_STRING, TYPE_ARRAY, TYPE_OBJECT, TYPE_SET,
  typeOf, intValue, stringLength, stringData,
  newArray, arrayAppend, arrayGet, newObject, objectInsert, objectInsertOnce, objectKeyAt, objectValueAt,
  newSet, setAdd, collectionLength, collectionItems, getMember, valuesEqual, parseJSON, isArray,
} from "./value";

/** The policy's constants: a JSON array parsed once, when the module starts. */
let constants: Value = UNDEFINED;

/** Parses the JSON array of constants at ptr; its bytes must stay in place (strings point into them). */
export function rt_set_consts(ptr: usize, len: i32): void {
  constants = parseJSON(ptr, len);
  if (!isArray(constants)) abortWithMessage("invalid constants");
}

export function rt_const(index: i32): Value {
  return arrayGet(constants, index);
}

export function rt_make_array(capacity: i32): Value {
  return newArray(capacity);
}

export function rt_make_object(): Value {
  return newObject(0);
}

export function rt_make_set(): Value {
  return newSet(0);
}

export function rt_array_append(array: Value, v: Value): void {
  arrayAppend(array, v);
}

export function rt_object_insert(object: Value, key: Value, v: Value): void {
  objectInsert(object, key, v);
}

export function rt_object_insert_once(object: Value, key: Value, v: Value): i32 {
  return i32(objectInsertOnce(object, key, v));
}

export function rt_set_add(set: Value, v: Value): void {
  setAdd(set, v);
}

export function rt_dot(collection: Value, key: Value): Value {
  return getMember(collection, key);
}

/** What `count` returns: code points of a string, elements of a collection; else undefined. */
export function rt_len(v: Value): Value {
  return bi_count(v);
}

export function rt_iter_count(v: Value): i32 {
  return typeOf(v) >= TYPE_ARRAY ? collectionLength(v) : 0;
}

/** Key of the i-th element: the index for arrays, the key for objects, the element for sets. */
export function rt_iter_key(collection: Value, i: i32): Value {
  switch (typeOf(collection)) {
    case TYPE_ARRAY: return intValue(i);
    case TYPE_OBJECT: return objectKeyAt(collection, i);
    case TYPE_SET: return load<Value>(collectionItems(collection) + (<usize>i << 2));
  }
  return UNDEFINED;
}

export function rt_iter_value(collection: Value, i: i32): Value {
  switch (typeOf(collection)) {
    case TYPE_ARRAY:
    case TYPE_SET: return load<Value>(collectionItems(collection) + (<usize>i << 2));
    case TYPE_OBJECT: return objectValueAt(collection, i);
  }
  return UNDEFINED;
}

export function rt_equal(a: Value, b: Value): i32 {
  return i32(valuesEqual(a, b));
}

export function rt_is_array(v: Value): i32 {
  return i32(typeOf(v) == TYPE_ARRAY);
}

export function rt_is_object(v: Value): i32 {
  return i32(typeOf(v) == TYPE_OBJECT);
}

export function rt_is_set(v: Value): i32 {
  return i32(typeOf(v) == TYPE_SET);
}

/**
 * The elements of an array as a set: a host builtin answering a set can only send JSON, where a
 * set is an array. Any other value (undefined included) is returned as it is.
 */
export function rt_set_of(v: Value): Value {
  if (!isArray(v)) return v;
  const n = collectionLength(v);
  const set = newSet(n);
  for (let i = 0; i < n; i++) setAdd(set, arrayGet(v, i));
  return set;
}

/** Adds {"result": v} to the result set. */
export function rt_result_set_add(resultSet: Value, v: Value): void {
  resultSetAdd(resultSet, v);
}

/** Aborts evaluation with the message in a string value (or a generic one). */
export function rt_abort(message: Value): void {
  if (typeOf(message) == TYPE_STRING) abortWithBytes(stringData(message), stringLength(message));
  abortWithMessage("evaluation aborted");
}
