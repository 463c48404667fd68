/**
 * The Unicode data Go's `unicode` package carries, which OPA's `regex.*`, `lower` and `upper`
 * answer by: version 15.0.0, the version of Go 1.21 and every release since that OPA has been
 * built with. The policy runtime's tables are generated from this (never from the Unicode of
 * the Node.js that runs the generator, which is newer and would classify code points assigned
 * since then where OPA does not), read from the Unicode Consortium's data as
 * `@unicode/unicode-15.0.0` publishes it.
 */
import { createRequire } from 'node:module';

export const UNICODE_VERSION = '15.0.0';

const PACKAGE = `@unicode/unicode-${UNICODE_VERSION}`;
const require = createRequire(import.meta.url);
const packageDir = require.resolve(`${PACKAGE}/package.json`).replace(/package\.json$/, '');

export type Range = [number, number];

interface UnicodeRange {
  begin: number;
  end: number;
}

async function load<T>(path: string): Promise<T> {
  return ((await import(`${packageDir}${path}`)) as { default: T }).default;
}

/** Inclusive ranges from the package's `ranges.mjs` (whose ends are exclusive). */
async function ranges(dir: string): Promise<Range[]> {
  const loaded = await load<UnicodeRange[]>(`${dir}/ranges.mjs`);
  return loaded.map((r) => [r.begin, r.end - 1]);
}

/**
 * Go's `unicode.CategoryAliases`: the General_Category value aliases of Unicode's
 * PropertyValueAliases.txt, each to the short name it stands for.
 */
export const CATEGORY_ALIASES: Readonly<Record<string, string>> = {
  Other: 'C', Control: 'Cc', cntrl: 'Cc', Format: 'Cf', Unassigned: 'Cn', Private_Use: 'Co', Surrogate: 'Cs',
  Letter: 'L', Cased_Letter: 'LC', Lowercase_Letter: 'Ll', Modifier_Letter: 'Lm', Other_Letter: 'Lo',
  Titlecase_Letter: 'Lt', Uppercase_Letter: 'Lu',
  Mark: 'M', Combining_Mark: 'M', Spacing_Mark: 'Mc', Enclosing_Mark: 'Me', Nonspacing_Mark: 'Mn',
  Number: 'N', Decimal_Number: 'Nd', digit: 'Nd', Letter_Number: 'Nl', Other_Number: 'No',
  Punctuation: 'P', punct: 'P', Connector_Punctuation: 'Pc', Dash_Punctuation: 'Pd', Close_Punctuation: 'Pe',
  Final_Punctuation: 'Pf', Initial_Punctuation: 'Pi', Other_Punctuation: 'Po', Open_Punctuation: 'Ps',
  Symbol: 'S', Currency_Symbol: 'Sc', Modifier_Symbol: 'Sk', Math_Symbol: 'Sm', Other_Symbol: 'So',
  Separator: 'Z', Line_Separator: 'Zl', Paragraph_Separator: 'Zp', Space_Separator: 'Zs',
};

/**
 * How Go's regexp/syntax (since Go 1.25) compares the names of `\p{…}`, after Unicode TR18's
 * loose matching: `_`, `-` and spaces dropped, the first letter upper case, the rest lower case.
 */
export function canonicalName(name: string): string {
  let out = '';
  for (const c of name) {
    if (c === '_' || c === '-' || c === ' ') continue;
    out += out === '' ? c.replace(/[a-z]/, (l) => l.toUpperCase()) : c.replace(/[A-Z]/, (u) => u.toLowerCase());
  }
  return out;
}

/** The code points of leaf general category `short` (`Lu`, `Nd`, …; not Cn). */
export function categoryRanges(short: string): Promise<Range[]> {
  // The package names its directories by each category's long name.
  const name = Object.keys(CATEGORY_ALIASES).find((alias) => CATEGORY_ALIASES[alias] === short && /^[A-Z]/.test(alias));
  if (!name || short.length !== 2 || short === 'Cn') throw new Error(`${short} is not a leaf general category with assigned code points`);
  return ranges(`General_Category/${name}`);
}

/**
 * The scripts Go's `unicode.Scripts` names: every value of the Script property in Scripts.txt.
 * `Unknown`, the value of code points Scripts.txt does not list, is not one of them.
 */
export async function scriptNames(): Promise<string[]> {
  const { readdirSync } = await import('node:fs');
  return readdirSync(`${packageDir}Script`).filter((name) => name !== 'Unknown').sort();
}

export function scriptRanges(name: string): Promise<Range[]> {
  return ranges(`Script/${name}`);
}

/** Simple (one code point to one) case mappings of UnicodeData.txt, as Go's `unicode.ToUpper`/`ToLower` apply them. */
export async function simpleCaseMapping(to: 'Uppercase' | 'Lowercase'): Promise<Map<number, number>> {
  return load<Map<number, number>>(`Simple_Case_Mapping/${to}/code-points.mjs`);
}

/**
 * Go's `unicode.SimpleFold` as a map from each code point that folds to the next one of its
 * orbit (the smallest greater one, or the smallest of all from the greatest). An orbit is the
 * set of code points equal under simple case folding: CaseFolding.txt's common (C) and simple (S)
 * mappings, each code point with the one it folds to.
 */
export async function simpleFoldNext(): Promise<Map<number, number>> {
  const orbits = new Map<number, Set<number>>();
  for (const status of ['C', 'S']) {
    for (const [from, to] of await load<Map<number, number>>(`Case_Folding/${status}/code-points.mjs`)) {
      const orbit = orbits.get(to) ?? orbits.set(to, new Set([to])).get(to)!;
      orbit.add(from);
    }
  }
  const next = new Map<number, number>();
  for (const orbit of orbits.values()) {
    const members = [...orbit].sort((a, b) => a - b);
    members.forEach((member, i) => next.set(member, members[(i + 1) % members.length]!));
  }
  return next;
}
