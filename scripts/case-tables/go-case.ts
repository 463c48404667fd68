/**
 * Go's `strings.ToLower` / `strings.ToUpper`, which OPA's `lower` and `upper` use: every code
 * point mapped on its own by Unicode's *simple* case mapping (`ß` stays `ß`, `İ` lowercases to
 * `i`, no final-sigma rule), from the Unicode data Go carries (../go-unicode.ts). JavaScript's
 * `toLowerCase`/`toUpperCase` apply the full, contextual mapping of a newer Unicode, so they are
 * not used.
 */
import { simpleCaseMapping } from '../go-unicode.ts';

export interface GoCase {
  toLower(s: string): string;
  toUpper(s: string): string;
}

export async function goCase(): Promise<GoCase> {
  const [upper, lower] = await Promise.all([simpleCaseMapping('Uppercase'), simpleCaseMapping('Lowercase')]);
  const mapper = (mapping: Map<number, number>) => (s: string): string => {
    let out = '';
    for (const ch of s) {
      const cp = ch.codePointAt(0)!;
      out += String.fromCodePoint(mapping.get(cp) ?? cp);
    }
    return out;
  };
  return { toLower: mapper(lower), toUpper: mapper(upper) };
}
