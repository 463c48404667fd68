// graph.reachable.

import {
  Value, UNDEFINED, TYPE_ARRAY, TYPE_SET,
  typeOf, isObject, objectGet, newArray, arrayLength, arrayGet, arrayAppend,
  newSet, setContains, setAdd, collectionLength, collectionItems,
} from "../value";

/** Appends the vertices of an array or set to the queue; anything else holds none. */
function enqueue(queue: Value, vertices: Value, reached: Value): void {
  const tag = typeOf(vertices);
  if (tag != TYPE_ARRAY && tag != TYPE_SET) return;
  const items = collectionItems(vertices);
  for (let i = 0; i < collectionLength(vertices); i++) {
    const v = load<Value>(items + (<usize>i << 2));
    if (!setContains(reached, v)) arrayAppend(queue, v);
  }
}

/**
 * The vertices reachable from `initial` (an array or set) along the edges of `graph` (an object
 * from each vertex to an array or set of its neighbours), breadth first. As in OPA, a vertex that
 * is not a key of the graph is never reached, not even an initial one.
 */
export function bi_graph_reachable(graph: Value, initial: Value): Value {
  const tag = typeOf(initial);
  if (!isObject(graph) || (tag != TYPE_ARRAY && tag != TYPE_SET)) return UNDEFINED;
  const reached = newSet(0);
  const queue = newArray(collectionLength(initial));
  enqueue(queue, initial, reached);
  for (let i = 0; i < arrayLength(queue); i++) {
    const vertex = arrayGet(queue, i);
    if (setContains(reached, vertex)) continue;
    const edges = objectGet(graph, vertex);
    if (!edges) continue;
    setAdd(reached, vertex);
    enqueue(queue, edges, reached);
  }
  return reached;
}
