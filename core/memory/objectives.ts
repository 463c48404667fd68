import { createHash } from 'node:crypto';
import type { Env } from '../env.ts';
import { GatehouseError } from '../errors.ts';
import type { MemoryItem } from './item.ts';
import type { Memory } from './memory.ts';

/**
 * Objectives: what decisions are for. Each is a memory item in the `objectives` namespace (so it
 * is versioned, searchable and linkable like any evidence); a decision serves it through a
 * `serves` edge from the decision's item. A decision names objectives by id, by key, or by
 * title; a title no objective has yet creates one (key: the title as a slug, see `titleKey`).
 */
export const OBJECTIVES = 'objectives';

export interface ObjectiveDraft {
  title: string;
  description?: string;
  key?: string;
}

export interface ServingDecision {
  decisionId: string;
  title: string;
  status: string;
  /** The version of the decision's memory item that carries the link. */
  version: number;
}

/** `Ship the fix!` → `ship-the-fix`; empty when nothing is left. */
export function slug(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 96)
    .replace(/-+$/, '');
}

/**
 * The key an objective created from `title` gets: its slug, or for a title with no Latin letter
 * or digit (`日本語`, `€€€`) one derived from its hash. Never empty, so creating an objective from a
 * decision's `objectives`, which happens inside the decision's write transaction, cannot fail.
 */
export function titleKey(title: string): string {
  return slug(title) || `title-${createHash('sha256').update(title).digest('hex').slice(0, 16)}`;
}

export class Objectives {
  constructor(private readonly memory: Memory) {}

  private draft(objective: ObjectiveDraft) {
    const key = objective.key ?? titleKey(objective.title);
    return {
      namespace: OBJECTIVES,
      key,
      text: objective.description ? `${objective.title}\n${objective.description}` : objective.title,
      attributes: { title: objective.title, ...(objective.description ? { description: objective.description } : {}) },
    };
  }

  /** Refuses (400) an objective `write` would refuse: before the transaction. */
  check(env: Env, objective: ObjectiveDraft): void {
    this.memory.check(env, this.draft(objective));
  }

  /** Stores an objective, or a new version of the one with the same key; call inside `store.commit`. */
  write(env: Env, by: string, objective: ObjectiveDraft, vector: Float32Array | null): MemoryItem {
    return this.memory.write(env, by, this.draft(objective), vector);
  }

  /** The objective an id, key or title refers to. */
  resolve(env: Env, ref: string): string | undefined {
    if (ref.startsWith('mem_')) {
      const item = this.memory.items.latest(env, ref);
      return item?.namespace === OBJECTIVES && !item.tombstone ? ref : undefined;
    }
    return this.memory.idForKey(env, OBJECTIVES, ref) ?? this.memory.idForKey(env, OBJECTIVES, titleKey(ref));
  }

  /** The objective `ref` names, or one written from it as a title if there is none; call inside `store.commit`. */
  ensure(env: Env, by: string, ref: string): string {
    return this.resolve(env, ref) ?? this.memory.write(env, by, this.draft({ title: ref }), null).id;
  }

  list(env: Env): MemoryItem[] {
    return this.memory.list(env, OBJECTIVES);
  }

  /** The objective's current version; 404 for anything else. */
  get(env: Env, id: string): MemoryItem {
    const item = this.memory.get(env, id);
    if (item.namespace !== OBJECTIVES) throw new GatehouseError('not_found', `${id} is not an objective`);
    return item;
  }

  /** The current memory of decision `decisionId`, which `link` adds a version to; 404 for an unknown objective or decision. */
  private linkable(env: Env, objectiveId: string, decisionId: string): MemoryItem {
    this.get(env, objectiveId);
    const itemId = this.memory.idForKey(env, 'decisions', decisionId);
    const decision = itemId === undefined ? undefined : this.memory.items.latest(env, itemId);
    if (!decision || decision.tombstone) throw new GatehouseError('not_found', `no decision ${decisionId} in memory`);
    return decision;
  }

  /** Refuses (404) a link `link` could not make: before the transaction. */
  checkLink(env: Env, objectiveId: string, decisionId: string): void {
    this.linkable(env, objectiveId, decisionId);
  }

  /**
   * Links decision `decisionId` to the objective: a new version of the decision's item with a
   * `serves` edge (its other edges keep the versions they name), or null when it already serves
   * it. Call inside `store.commit`, after `checkLink`.
   */
  link(env: Env, by: string, objectiveId: string, decisionId: string): MemoryItem | null {
    const decision = this.linkable(env, objectiveId, decisionId);
    if (decision.links.some((link) => link.relation === 'serves' && link.to === objectiveId)) return null;
    return this.memory.write(
      env,
      by,
      {
        namespace: decision.namespace,
        key: decision.key,
        text: decision.text,
        attributes: decision.attributes,
        links: [...decision.links, { to: objectiveId, relation: 'serves' }],
      },
      this.memory.storedVector(decision),
    );
  }

  /** The decisions whose current memory serves the objective, oldest first. */
  decisions(env: Env, id: string): ServingDecision[] {
    return this.memory
      .linkedFrom(env, id, 'serves')
      .filter(({ item }) => item.namespace === 'decisions')
      .map(({ item }) => ({ decisionId: item.key, title: String(item.attributes.title ?? ''), status: String(item.attributes.status ?? ''), version: item.version }))
      .sort((a, b) => (a.decisionId < b.decisionId ? -1 : 1));
  }
}
