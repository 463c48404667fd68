import type { Env } from '../env.ts';

/**
 * A memory item is one version of a piece of evidence: its text, attributes and links as written
 * at one moment. Writing the same (namespace, key) again adds version N+1; nothing is ever
 * overwritten, and deleting writes a tombstone version. Every version also carries the
 * environment-wide `revision` it was written at, which is what `asOf` queries are answered by.
 */
export interface MemoryLink {
  /** The id of the item linked to. */
  to: string;
  /** `uses`, `serves`, `governed_by`, `approved_by`, `supersedes`, or a caller's own relation. */
  relation: string;
  /** The target's version when the link was written, so lineage names the exact evidence. */
  version: number;
}

export interface MemoryItem {
  id: string;
  env: Env;
  namespace: string;
  key: string;
  /** 1 for the first write of this key, then 2, 3, … */
  version: number;
  /** Position in the environment's write order (1, 2, …): all memory as of revision R is every item's latest version with revision ≤ R. */
  revision: number;
  text: string;
  attributes: Record<string, unknown>;
  links: MemoryLink[];
  /** A deletion: the item is absent from this version on (until written again). */
  tombstone: boolean;
  createdAt: string;
  /** The API key that wrote this version (or whose decision did). */
  createdBy: string;
}

/** The relations Gatehouse writes itself when it records a decision. */
export const DECISION_RELATIONS = ['uses', 'serves', 'governed_by', 'approved_by', 'supersedes'] as const;

/** Namespaces only Gatehouse writes (decisions and what they point at); the API refuses writes there. */
export const SYSTEM_NAMESPACES: ReadonlySet<string> = new Set(['decisions', 'objectives', 'policies', 'keys']);

export const NAMESPACE_PATTERN = /^[a-z0-9][a-z0-9_.-]{0,63}$/;
export const KEY_PATTERN = /^[A-Za-z0-9_./-]{1,191}$/;
export const RELATION_PATTERN = /^[a-z][a-z0-9_]{0,63}$/;

/** What a client writes; the store assigns id, version, revision and time. */
export interface MemoryDraft {
  namespace: string;
  key?: string;
  text: string;
  attributes?: Record<string, unknown>;
  /** Targets by id (`mem_…`) or by `namespace:key` label; `version` pins one (default: the latest). */
  links?: Array<{ to: string; relation: string; version?: number }>;
}

/** The item as the API returns it (the env is implied by the key that asks). */
export type MemoryItemView = Omit<MemoryItem, 'env'>;

export function itemView(item: MemoryItem): MemoryItemView {
  const { env: _env, ...view } = item;
  return view;
}
