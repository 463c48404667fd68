import { tokens, type LayerBudget } from './budget.ts';
import { cite, type Citation } from './lineage.ts';
import type { MemoryLink } from '../memory/item.ts';
import type { Source } from './sources.ts';

/**
 * The Raw layer: the signals as stored — each source's memory version with its text, attributes
 * and links, in the role's order. A signal's text is the part the budget may cut (`truncated`);
 * its attributes are admitted whole or the signal is left out, so whatever is shown of a stored
 * value is what is stored.
 */
export interface Signal {
  id: string;
  namespace: string;
  key: string;
  version: number;
  revision: number;
  text: string;
  truncated: boolean;
  attributes: Record<string, unknown>;
  links: MemoryLink[];
  createdAt: string;
  createdBy: string;
  lineage: Citation[];
}

export interface RawLayer {
  signals: Signal[];
}

export function rawLayer(sources: readonly Source[], budget: LayerBudget): RawLayer {
  const signals: Signal[] = [];
  for (const source of sources) {
    const { item } = source;
    const fitted = budget.fit(item.text, tokens(JSON.stringify(item.attributes)));
    if (!fitted) continue;
    signals.push({
      id: item.id,
      namespace: item.namespace,
      key: item.key,
      version: item.version,
      revision: item.revision,
      text: fitted.text,
      truncated: fitted.truncated,
      attributes: item.attributes,
      links: item.links,
      createdAt: item.createdAt,
      createdBy: item.createdBy,
      lineage: cite(source),
    });
  }
  return { signals };
}
