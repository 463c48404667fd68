import type { LayerBudget } from './budget.ts';
import { tokens } from './budget.ts';
import { cite, type Citation } from './lineage.ts';
import { ROLE_PROFILES, type Role } from './roles.ts';
import { sentences } from './sentences.ts';
import type { Source } from './sources.ts';

/**
 * The Executive layer: a short extractive summary and the key figures. The summary is the lead
 * sentence of each source in the role's order (a decision's lead sentence is its title), up to
 * the role's count, duplicates skipped; the figures are attribute values of the sources, chosen
 * by the role (core/context/roles.ts). Nothing is written that is not in a source: sentences are
 * quoted, figures are stored values under their attribute name.
 */
export interface Statement {
  text: string;
  /** Cut to fit the budget (ends with `…`); the lineage still names the full source. */
  truncated: boolean;
  lineage: Citation[];
}

export type Scalar = string | number | boolean;

export interface Figure {
  /** The source as `namespace:key`. */
  label: string;
  attribute: string;
  value: Scalar;
  lineage: Citation[];
}

export interface ExecutiveLayer {
  summary: Statement[];
  figures: Figure[];
}

export function executiveLayer(sources: readonly Source[], role: Role, budget: LayerBudget): ExecutiveLayer {
  const profile = ROLE_PROFILES[role];
  const summary: Statement[] = [];
  for (const { text, source } of leadSentences(sources).slice(0, profile.summarySentences)) {
    const fitted = budget.fit(text);
    if (fitted) summary.push(Object.assign({}, fitted, { lineage: cite(source) }));
  }
  const figures: Figure[] = [];
  for (const figure of keyFigures(sources, profile.figures).slice(0, profile.maxFigures)) {
    if (budget.admit(tokens(`${figure.label} ${figure.attribute} ${String(figure.value)}`))) figures.push(figure);
  }
  return { summary, figures };
}

/** The first sentence of each source, in order, each text once. */
function leadSentences(sources: readonly Source[]): Array<{ text: string; source: Source }> {
  const leads: Array<{ text: string; source: Source }> = [];
  const seen = new Set<string>();
  for (const source of sources) {
    const text = sentences(source.item.text)[0];
    if (text === undefined || seen.has(text)) continue;
    seen.add(text);
    leads.push({ text, source });
  }
  return leads;
}

/** Every key figure the role's specs pick, sources in order, each (source, attribute) once. */
function keyFigures(sources: readonly Source[], specs: readonly string[]): Figure[] {
  const figures: Figure[] = [];
  for (const source of sources) {
    const { attributes, namespace, key } = source.item;
    const picked = new Set<string>();
    for (const spec of specs) {
      const names = spec === '#number' ? Object.keys(attributes).filter((name) => typeof attributes[name] === 'number' && Number.isFinite(attributes[name])) : [spec];
      for (const name of names) {
        const value = attributes[name];
        if (picked.has(name) || !isScalar(value)) continue;
        picked.add(name);
        figures.push({ label: `${namespace}:${key}`, attribute: name, value, lineage: cite(source) });
      }
    }
  }
  return figures;
}

export function isScalar(value: unknown): value is Scalar {
  return typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}
