import { ENVS, type Env } from '../env.ts';
import { log } from '../log.ts';
import type { Store } from '../store.ts';
import { EvictedItems } from './evicted-items.ts';
import type { MemoryItem } from './item.ts';
import { DECISIONS_NAMESPACE, type HeldVersion, type MemorySpace } from './space.ts';

/**
 * Decision items memory holds per environment at least unless configured; up to `COMPACT_AT`
 * times as many between two compactions. At about 1,700 bytes of heap each (docs/memory.md),
 * 85 MB at least, 255 MB at most, and 340 MB while a compaction builds the space that replaces
 * the old.
 */
export const DEFAULT_RETAINED_DECISIONS = 50_000;

/**
 * How far the decision items held may grow past the number retained before a compaction drops
 * the oldest. A compaction copies what it keeps, so it copies 1 / (COMPACT_AT - 1) documents per
 * decision recorded: at 1.5 (two each) it cost 16% more CPU per decision at the decisions bench's
 * maximum; at 3, compacting and indexing the dropped keys take about 5 µs of a decision's ~200
 * (CPU profiles of that load, compacting and not: docs/memory.md).
 */
export const COMPACT_AT = 3;

/** The longest a step of a compaction holds the event loop, in ms. */
const COMPACTION_SLICE_MS = 4;
/** How long after a failed compaction the next is tried. */
const COMPACTION_RETRY_MS = 60_000;

/** What the rebuild at start holds of what is stored, per environment. */
export interface RetainedAtStart {
  horizons: Record<Env, number>;
  /** The versions held, in LMDB's order. */
  kept: Record<Env, MemoryItem[]>;
  /** Of each item kept (`env\0id`), its oldest version kept. */
  firstKept: Map<string, number>;
}

/**
 * Retention (docs/memory.md): memory's query side holds the newest `retain` decision items per
 * environment (by their latest version), every other item, and the versions visible from its
 * horizon on. It decides what the rebuild at start holds (`atStart`), and compacts a space that
 * has grown past `COMPACT_AT` times that (`afterAdd`); `dropped` says where what it dropped leads.
 */
export class Retention {
  readonly dropped: EvictedItems;
  private readonly compactions: Record<Env, Promise<void> | null> = { sandbox: null, production: null };
  /** After a compaction failed (the disk full, say), when to try again. */
  private readonly compactAfter: Record<Env, number> = { sandbox: 0, production: 0 };
  private readonly compactedListeners: Array<(env: Env) => void> = [];

  constructor(
    store: Store,
    readonly retain: number = DEFAULT_RETAINED_DECISIONS,
  ) {
    if (!Number.isSafeInteger(retain) || retain < 1) throw new Error(`memory's retained decisions must be a whole number from 1, got ${retain}`);
    this.dropped = new EvictedItems(store);
  }

  /**
   * What the rebuild holds of `stored` (every stored item's versions, item by item, read anew
   * at each call): two passes, so that only what is kept is ever held at once (LMDB keeps every
   * decision ever recorded). The first finds each environment's horizon from the latest revision
   * of every decision item (8 bytes each); the second keeps what is newer, and indexes the keys
   * of the decision items it leaves out.
   */
  atStart(stored: () => Iterable<MemoryItem[]>): RetainedAtStart {
    const latestDecisions: Record<Env, number[]> = { sandbox: [], production: [] };
    for (const versions of stored()) {
      const last = versions.at(-1)!;
      if (last.namespace === DECISIONS_NAMESPACE) latestDecisions[last.env].push(last.revision);
    }
    const horizons = { sandbox: 0, production: 0 };
    for (const env of ENVS) {
      const latest = Float64Array.from(latestDecisions[env]).sort();
      latestDecisions[env] = [];
      if (latest.length > this.retain) horizons[env] = latest[latest.length - this.retain]!;
    }
    const kept: Record<Env, MemoryItem[]> = { sandbox: [], production: [] };
    const firstKept = new Map<string, number>();
    const dropped: Record<Env, MemoryItem[]> = { sandbox: [], production: [] };
    for (const versions of stored()) {
      const last = versions.at(-1)!;
      const horizon = horizons[last.env];
      if (last.namespace === DECISIONS_NAMESPACE && last.revision < horizon) {
        dropped[last.env].push(last);
        if (dropped[last.env].length >= 4096) this.dropped.record(last.env, dropped[last.env].splice(0), true);
        continue;
      }
      const held = versions.filter((_, i) => i === versions.length - 1 || versions[i + 1]!.revision > horizon);
      firstKept.set(`${last.env}\0${last.id}`, held[0]!.version);
      kept[last.env].push(...held);
    }
    for (const env of ENVS) this.dropped.record(env, dropped[env], true);
    return { horizons, kept, firstKept };
  }

  /**
   * After a version was added to `space` (`env`'s): once it holds more than `COMPACT_AT` times
   * the decisions retained, drops the oldest down to `retain` (with the versions only visible
   * before the new horizon), in slices between other work. The compacted space is built while
   * the current one goes on serving and taking versions, then takes over in one turn through
   * `replace` (core/memory/space.ts). The keys of the items dropped are indexed in LMDB first, so
   * a decision recorded again (approved months later, say) finds its item and adds a version to
   * it instead of starting another.
   */
  afterAdd(env: Env, space: MemorySpace, replace: (env: Env, next: MemorySpace) => void): void {
    if (space.decisions <= this.retain * COMPACT_AT || this.compactions[env] || Date.now() < this.compactAfter[env]) return;
    const started = performance.now();
    const evicted: HeldVersion[] = [];
    const steps = space.compaction(this.retain, (version) => evicted.push(version));
    this.compactions[env] = new Promise<void>((resolve) => {
      let busyMs = 0;
      const slice = () => {
        try {
          const start = performance.now();
          let step: IteratorResult<void, MemorySpace | null>;
          do {
            // The keys go to LMDB between steps, so before the last one, which swaps the spaces.
            if (evicted.length > 0) this.dropped.record(env, evicted.splice(0));
            step = steps.next();
          } while (!step.done && performance.now() - start < COMPACTION_SLICE_MS);
          busyMs += performance.now() - start;
          if (!step.done) return void setImmediate(slice);
          if (step.value) replace(env, step.value);
          this.compactions[env] = null;
          resolve();
          if (!step.value) return;
          log.info({ env, decisions: step.value.decisions, versions: step.value.size, horizon: step.value.horizon, busyMs: Math.round(busyMs), tookMs: Math.round(performance.now() - started) }, 'memory dropped its oldest decisions');
          for (const listener of this.compactedListeners) listener(env);
        } catch (error) {
          // Ends the steps, so the space stops logging what arrives for a compaction gone.
          steps.return(null);
          this.compactAfter[env] = Date.now() + COMPACTION_RETRY_MS;
          log.error({ err: error, env, retryInMs: COMPACTION_RETRY_MS }, 'compacting memory failed; it holds every decision until the next attempt');
          this.compactions[env] = null;
          resolve();
        }
      };
      setImmediate(slice);
    });
  }

  /** Calls `listener` after a compaction replaced `env`'s space. */
  onCompacted(listener: (env: Env) => void): void {
    this.compactedListeners.push(listener);
  }

  /** Resolves once no compaction is under way. */
  async idle(): Promise<void> {
    for (const env of ENVS) while (this.compactions[env]) await this.compactions[env];
  }
}
