import { LAYERS, ROLE_PROFILES, type Layer, type Role } from './roles.ts';

/**
 * The synthesis budget, in approximate tokens: a text costs ⌈characters / 4⌉ (the usual rule of
 * thumb for English with common tokenizers). Only content counts (sentences, figure labels and
 * values, stored text and attributes); lineage and structure are free, so trimming content never
 * drops a citation.
 *
 * The total is split between the layers asked for by the role's shares (core/context/roles.ts),
 * renormalised; what a layer leaves unused passes to the next one (executive → detailed → raw).
 * Inside a layer, pieces are admitted in order while they fit; the first that does not fit is cut
 * at a word boundary and marked `truncated` if enough is left to be worth reading, and nothing
 * after it is admitted — what a layer shows is always a prefix of its order, never a later piece
 * in place of an earlier one.
 */
export const BUDGET_LIMITS = { min: 100, max: 20_000, default: 1_500 };

const CHARS_PER_TOKEN = 4;
/** A piece is cut only if at least this many tokens of it would remain. */
const MIN_CUT_TOKENS = 8;

export function tokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

/** How the total is shared between `layers` (given in canonical order) before any carry-over. */
export function layerShares(total: number, layers: readonly Layer[], role: Role): Record<Layer, number> {
  const shares = ROLE_PROFILES[role].shares;
  const sum = layers.reduce((acc, layer) => acc + shares[layer], 0);
  const allotted = { executive: 0, detailed: 0, raw: 0 };
  for (const layer of LAYERS) if (layers.includes(layer)) allotted[layer] = Math.floor((total * shares[layer]) / sum);
  return allotted;
}

/** What a layer was allowed (`carried` of it passed on from the layers before) and what it spent. */
export interface LayerReport {
  allotted: number;
  carried: number;
  used: number;
  omitted: number;
  truncated: boolean;
}

/** One layer's allowance as it is spent. */
export class LayerBudget {
  used = 0;
  /** Pieces left out for want of budget. */
  omitted = 0;
  truncated = false;
  private full = false;

  /** `share`: the layer's part of the total; `carried`: what the layers before it left unused. */
  constructor(
    readonly share: number,
    readonly carried: number,
  ) {}

  get allotted(): number {
    return this.share + this.carried;
  }

  get remaining(): number {
    return this.allotted - this.used;
  }

  /** Admits a piece costing `cost` whole, or refuses it (and everything after it). */
  admit(cost: number): boolean {
    if (this.full || cost > this.remaining) {
      this.full = true;
      this.omitted++;
      return false;
    }
    this.used += cost;
    return true;
  }

  /**
   * Admits `text` (plus `overhead` tokens that cannot be cut) whole or cut to what is left;
   * null when refused. A cut text ends with `…` and closes the layer.
   */
  fit(text: string, overhead = 0): { text: string; truncated: boolean } | null {
    if (!this.full && overhead + tokens(text) <= this.remaining) {
      this.used += overhead + tokens(text);
      return { text, truncated: false };
    }
    const room = this.remaining - overhead - 1;
    if (this.full || room < MIN_CUT_TOKENS) {
      this.full = true;
      this.omitted++;
      return null;
    }
    const limit = room * CHARS_PER_TOKEN;
    const space = text.lastIndexOf(' ', limit);
    const cut = `${text.slice(0, space > limit / 2 ? space : limit).trimEnd()}…`;
    this.used += overhead + tokens(cut);
    this.full = true;
    this.truncated = true;
    return { text: cut, truncated: true };
  }

  report(): LayerReport {
    return { allotted: this.allotted, carried: this.carried, used: this.used, omitted: this.omitted, truncated: this.truncated };
  }
}
