// json.filter and json.remove as OPA's topdown/json.go does them: the paths (JSON pointer
// strings or arrays of keys, read as json.patch reads them) become one tree of objects with null
// at each path's end, a path inside another path's end adding nothing; the document is then
// walked alongside the tree. An array element is found in the tree under its index as a decimal
// string, so a path given as an array must name it "0", not 0; a set element under itself.

import {
  Value, UNDEFINED, NULL_VALUE, TYPE_ARRAY, TYPE_SET,
  typeOf, isArray, isSet, isObject, isNull, isCollection,
  newObject, objectGet, objectGetBytes, objectInsert, objectLength, objectKeyAt, objectValueAt,
  newArray, arrayLength, arrayGet, arrayAppend, newSet, setLength, setAt, setAdd,
  collectionLength, collectionItems,
} from "../value";
import { parsePath } from "./json-patch";
import { piece } from "./text-buffer";

/** The members of `doc` (an object) that the paths name, with what lies below them. */
export function bi_json_filter(doc: Value, paths: Value): Value {
  if (!isObject(doc)) return UNDEFINED;
  const tree = pathTree(paths);
  return tree ? filtered(doc, tree) : UNDEFINED;
}

/** `doc` (an object) without the values the paths name; removed array elements close up. */
export function bi_json_remove(doc: Value, paths: Value): Value {
  if (!isObject(doc)) return UNDEFINED;
  const tree = pathTree(paths);
  return tree ? removed(doc, tree) : UNDEFINED;
}

/** OPA's pathsToObject over an array or set of paths; undefined for any other operand or path. */
function pathTree(paths: Value): Value {
  if (!isArray(paths) && !isSet(paths)) return UNDEFINED;
  const root = newObject(0);
  const items = collectionItems(paths);
  const n = collectionLength(paths);
  for (let i = 0; i < n; i++) {
    const keys = parsePath(load<Value>(items + (<usize>i << 2)));
    if (!keys) return UNDEFINED;
    addPath(root, keys);
  }
  return root;
}

/** Adds one path to the tree: objects along its keys, null at its end (an empty path adds nothing). */
function addPath(root: Value, keys: Value): void {
  const n = arrayLength(keys);
  if (n == 0) return;
  let node = root;
  for (let i = 0; i < n - 1; i++) {
    const key = arrayGet(keys, i);
    const child = objectGet(node, key);
    if (isNull(child)) return;
    if (!child) {
      const next = newObject(0);
      objectInsert(node, key, next);
      node = next;
    } else {
      node = child;
    }
  }
  objectInsert(node, arrayGet(keys, n - 1), NULL_VALUE);
}

/** The tree's node for an array's element `i`: the one under the index's decimal text. */
function nodeAtIndex(tree: Value, i: i32): Value {
  piece.begin();
  piece.decimal(i);
  return objectGetBytes(tree, piece.data, piece.len);
}

/** OPA's filterObject: what of `v` the tree node `tree` keeps (all of it at a null). */
function filtered(v: Value, tree: Value): Value {
  return isNull(tree) || !isCollection(v) ? v : rebuilt(v, tree, filteredChild);
}

function filteredChild(child: Value, node: Value): Value {
  return node ? filtered(child, node) : UNDEFINED;
}

/** OPA's jsonRemove: `v` without what the tree node `tree` names; undefined when it names all of `v`. */
function removed(v: Value, tree: Value): Value {
  if (isNull(tree)) return UNDEFINED;
  return !tree || !isCollection(v) ? v : rebuilt(v, tree, removed);
}

/**
 * A copy of the collection `v` made of `step(child, node)` for each child, `node` being the
 * tree's node for it (0 when there is none); a child whose step is undefined is left out.
 */
function rebuilt(v: Value, tree: Value, step: (child: Value, node: Value) => Value): Value {
  const tag = typeOf(v);
  if (tag == TYPE_ARRAY) {
    const result = newArray(0);
    const n = arrayLength(v);
    for (let i = 0; i < n; i++) {
      const kept = step(arrayGet(v, i), nodeAtIndex(tree, i));
      if (kept) arrayAppend(result, kept);
    }
    return result;
  }
  if (tag == TYPE_SET) {
    const result = newSet(0);
    const n = setLength(v);
    for (let i = 0; i < n; i++) {
      const x = setAt(v, i);
      const kept = step(x, objectGet(tree, x));
      if (kept) setAdd(result, kept);
    }
    return result;
  }
  const result = newObject(0);
  const n = objectLength(v);
  for (let i = 0; i < n; i++) {
    const key = objectKeyAt(v, i);
    const kept = step(objectValueAt(v, i), objectGet(tree, key));
    if (kept) objectInsert(result, key, kept);
  }
  return result;
}
