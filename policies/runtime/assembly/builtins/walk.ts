// walk: every [path, value] pair of a document, the document itself first (path []), then each
// child's pairs in turn: array elements by index, object members and set elements in value
// order (a set element is its own key). The planner iterates the pairs (`walk(x, [p, v])`).

import {
  Value, UNDEFINED, TYPE_ARRAY, TYPE_OBJECT, CollectionValue,
  typeOf, intValue, shallowCopy, newArray, arrayLength, arrayGet, arrayAppend,
  objectKeyAt, objectValueAt, setAt,
} from "../value";

/** Appends the pairs of v found at `path` (a scratch array, left as it was). */
function walkInto(pairs: Value, path: Value, v: Value): void {
  const pair = newArray(2);
  arrayAppend(pair, shallowCopy(path));
  arrayAppend(pair, v);
  arrayAppend(pairs, pair);
  const depth = arrayLength(path);
  const tag = typeOf(v);
  if (tag < TYPE_ARRAY) return;
  const n = changetype<CollectionValue>(v).len;
  for (let i = 0; i < n; i++) {
    let key: Value;
    let child: Value;
    if (tag == TYPE_ARRAY) {
      key = intValue(i);
      child = arrayGet(v, i);
    } else if (tag == TYPE_OBJECT) {
      key = objectKeyAt(v, i);
      child = objectValueAt(v, i);
    } else {
      key = setAt(v, i);
      child = key;
    }
    arrayAppend(path, key);
    walkInto(pairs, path, child);
    changetype<CollectionValue>(path).len = depth;
  }
}

export function bi_walk(v: Value): Value {
  if (!v) return UNDEFINED;
  const pairs = newArray(0);
  walkInto(pairs, newArray(0), v);
  return pairs;
}
