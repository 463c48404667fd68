import { tokens, type LayerBudget } from './budget.ts';
import { isScalar, type Scalar, type Statement } from './executive-layer.ts';
import { cite, sourceRef, type Citation, type SourceRef } from './lineage.ts';
import { sentences } from './sentences.ts';
import type { Source } from './sources.ts';

/**
 * The Detailed layer: the facts grouped by source, in the role's order. A group names its source
 * (id, version, namespace, key, how it relates to the subject) and holds every sentence of its
 * text, then every attribute value that reads as a fact (a scalar, or a list of scalars such as a
 * decision's reasons), each with its lineage. A group the budget left empty is not shown.
 */
export interface Value {
  attribute: string;
  value: Scalar | Scalar[];
  lineage: Citation[];
}

export interface SourceGroup {
  source: SourceRef;
  facts: Statement[];
  values: Value[];
}

export interface DetailedLayer {
  groups: SourceGroup[];
}

export function detailedLayer(sources: readonly Source[], budget: LayerBudget): DetailedLayer {
  const groups: SourceGroup[] = [];
  for (const source of sources) {
    const facts: Statement[] = [];
    for (const sentence of sentences(source.item.text)) {
      const fitted = budget.fit(sentence);
      if (fitted) facts.push(Object.assign({}, fitted, { lineage: cite(source) }));
    }
    const values: Value[] = [];
    for (const [attribute, value] of Object.entries(source.item.attributes)) {
      if (!isFact(value)) continue;
      if (budget.admit(tokens(`${attribute} ${JSON.stringify(value)}`))) values.push({ attribute, value, lineage: cite(source) });
    }
    if (facts.length > 0 || values.length > 0) groups.push({ source: sourceRef(source), facts, values });
  }
  return { groups };
}

function isFact(value: unknown): value is Scalar | Scalar[] {
  return isScalar(value) || (Array.isArray(value) && value.length > 0 && value.every(isScalar));
}
