// graph.reachable and graph.reachable_paths.

import {
  Value, UNDEFINED, TYPE_ARRAY, TYPE_SET,
  typeOf, isObject, objectGet, newArray, arrayLength, arrayGet, arrayAppend,
  newSet, setContains, setAdd, collectionLength, collectionItems, shallowCopy,
} from "../value";
import { valuesEqual } from "../compare";

/** The number of vertices in an array or set; anything else holds none. */
function vertexCount(vertices: Value): i32 {
  const tag = typeOf(vertices);
  return tag == TYPE_ARRAY || tag == TYPE_SET ? collectionLength(vertices) : 0;
}

/** Appends the vertices of an array or set to the queue; anything else holds none. */
function enqueue(queue: Value, vertices: Value, reached: Value): void {
  const n = vertexCount(vertices);
  if (n == 0) return;
  const items = collectionItems(vertices);
  for (let i = 0; i < n; i++) {
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

/** Whether the vertex already lies on the path, which is all a branch must not revisit. */
function onPath(path: Value, vertex: Value): bool {
  for (let i = 0; i < arrayLength(path); i++) {
    if (valuesEqual(arrayGet(path, i), vertex)) return true;
  }
  return false;
}

/**
 * Adds to `paths` every path that continues `path`, which ends in the vertex with `edges`. A path
 * ends at a vertex without neighbours, before a vertex that is not a key of the graph, and, when
 * `stopsAtCycles`, before a neighbour it already holds. Each branch extends its own copy, so
 * siblings never see each other's vertices (OPA since PR #8510).
 */
function branch(graph: Value, path: Value, edges: Value, paths: Value, stopsAtCycles: bool): void {
  const n = vertexCount(edges);
  if (n == 0) {
    setAdd(paths, path);
    return;
  }
  const items = collectionItems(edges);
  for (let i = 0; i < n; i++) {
    const next = load<Value>(items + (<usize>i << 2));
    const nextEdges = objectGet(graph, next);
    if (!nextEdges || (stopsAtCycles && onPath(path, next))) {
      setAdd(paths, path);
      continue;
    }
    const extended = shallowCopy(path);
    arrayAppend(extended, next);
    branch(graph, extended, nextEdges, paths, true);
  }
}

/**
 * The set of paths (arrays of vertices) leading out of each initial vertex that is a key of
 * `graph`, as OPA's `graph.reachable_paths` builds them: every path runs until it leaves the
 * graph, reaches a vertex without neighbours or would close a cycle. An initial vertex without
 * neighbours is a path by itself; one that is not a key of the graph yields none.
 */
export function bi_graph_reachable_paths(graph: Value, initial: Value): Value {
  const tag = typeOf(initial);
  if (!isObject(graph) || (tag != TYPE_ARRAY && tag != TYPE_SET)) return UNDEFINED;
  const paths = newSet(0);
  const starts = collectionItems(initial);
  for (let i = 0; i < collectionLength(initial); i++) {
    const start = load<Value>(starts + (<usize>i << 2));
    const edges = objectGet(graph, start);
    if (!edges) continue;
    const path = newArray(1);
    arrayAppend(path, start);
    // OPA looks for cycles only from the second step on: a start with an edge to itself yields
    // the path [start, start].
    branch(graph, path, edges, paths, false);
  }
  return paths;
}
