import type { Source } from './sources.ts';

/**
 * Lineage: the exact memory versions a statement was taken from. Every statement in every layer
 * carries it, so `GET /v1/memory/{id}?version=` returns the text or value the statement quotes.
 */
export interface Citation {
  id: string;
  version: number;
}

export function cite(source: Source): Citation[] {
  return [{ id: source.item.id, version: source.item.version }];
}

/** How a source is described wherever it is listed: its identity, version and place in the subject. */
export interface SourceRef {
  id: string;
  version: number;
  namespace: string;
  key: string;
  kind: Source['kind'];
  relation: string;
  score: number | null;
}

export function sourceRef(source: Source): SourceRef {
  const { item } = source;
  return { id: item.id, version: item.version, namespace: item.namespace, key: item.key, kind: source.kind, relation: source.relation, score: source.score };
}
