import type { Env } from '../env.ts';
import { GatehouseError } from '../errors.ts';
import type { MemoryItem } from '../memory/item.ts';
import type { Memory } from '../memory/memory.ts';
import { ROLE_PROFILES, type Role } from './roles.ts';

/**
 * The evidence a synthesis is built from, read at one memory revision so every layer cites the
 * same versions:
 *
 * - for a decision: its memory item as of the revision, then every item its edges point at, at
 *   the version the edge names (the value the decision saw), in the order the edges were written;
 * - for a query: the hybrid retrieval's results (core/memory/memory.ts), best first.
 *
 * Each source is one exact item version: that `id@version` is the lineage of every statement
 * taken from it.
 */
export type SourceKind = 'decision' | 'objective' | 'policy' | 'approver' | 'evidence';

export interface Source {
  item: MemoryItem;
  kind: SourceKind;
  /** `subject` (the decision itself), the decision's edge to it, `match` (a query result), or the edge a query result was reached by. */
  relation: string;
  /** The hybrid score of a query result; null for a decision's sources. */
  score: number | null;
}

export type Subject = { decisionId: string; query?: undefined } | { query: string; decisionId?: undefined };

/** Query results a synthesis reads for a query subject. */
export const QUERY_SOURCES = 10;

const KIND_BY_NAMESPACE: Record<string, SourceKind> = { decisions: 'decision', objectives: 'objective', policies: 'policy', keys: 'approver' };

function kindOf(item: MemoryItem): SourceKind {
  return KIND_BY_NAMESPACE[item.namespace] ?? 'evidence';
}

/** The sources of `subject` as of `revision`, in relevance order. */
export async function gatherSources(memory: Memory, env: Env, subject: Subject, revision: number): Promise<Source[]> {
  if (subject.decisionId !== undefined) return decisionSources(memory, env, subject.decisionId, revision);
  const answer = await memory.query(env, { query: subject.query, topK: QUERY_SOURCES, asOf: revision });
  return answer.results.map((hit) => ({ item: hit.item, kind: kindOf(hit.item), relation: hit.lineage.via?.relation ?? 'match', score: hit.score }));
}

function decisionSources(memory: Memory, env: Env, decisionId: string, revision: number): Source[] {
  const id = memory.idForKey(env, 'decisions', decisionId);
  if (id === undefined) throw new GatehouseError('not_found', `no decision ${decisionId} in memory`);
  const decision = memory.get(env, id, { asOf: revision });
  const sources: Source[] = [{ item: decision, kind: 'decision', relation: 'subject', score: null }];
  const seen = new Set([decision.id]);
  for (const link of decision.links) {
    if (seen.has(link.to)) continue;
    seen.add(link.to);
    const item = memory.get(env, link.to, { version: link.version });
    if (!item.tombstone) sources.push({ item, kind: kindOf(item), relation: link.relation, score: null });
  }
  return sources;
}

/** `sources` in the order `role` reads them: by kind as the role ranks kinds, then as gathered. */
export function orderForRole(sources: readonly Source[], role: Role): Source[] {
  const kinds = ROLE_PROFILES[role].kinds;
  return sources
    .map((source, index) => ({ source, index }))
    .sort((a, b) => kinds.indexOf(a.source.kind) - kinds.indexOf(b.source.kind) || a.index - b.index)
    .map(({ source }) => source);
}
