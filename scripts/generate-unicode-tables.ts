/**
 * Writes policies/runtime/assembly/regex/unicode-tables.ts: the Unicode data the policy runtime's
 * regular expressions need, from the Unicode data Go carries (scripts/go-unicode.ts), never typed
 * by hand.
 *
 *   node --import=./scripts/register-typescript.js scripts/generate-unicode-tables.ts
 *
 * - General categories: the leaf categories (Lu, Ll, …) but Cn, which the runtime derives as
 *   what no other category holds; `\pL`, `\p{L}` and the like are unions the runtime forms.
 * - Scripts: the scripts Go's `unicode.Scripts` names, each with its code points.
 * - Category aliases: Go's `unicode.CategoryAliases` (`Letter` for `L`).
 *
 * Names are stored as Go's regexp/syntax compares them (`canonicalName`: `Old_Italic` as
 * `Olditalic`), so the runtime canonicalises the name in a pattern and compares bytes.
 * - Case folding: Go's `unicode.SimpleFold` orbits, the classes of code points that are equal
 *   under Unicode simple case folding.
 *
 * Encoding (all in one block of bytes, unsigned LEB128 varints): a range table is a count, then for
 * each range the gap from the end of the previous one (from -1 for the first) and its length
 * minus one. The fold table maps each code point to the next one of its orbit (the smallest
 * greater one, or the smallest of all from the greatest) as disjoint runs of consecutive code
 * points: a count of runs, then for each run the distance from the previous run's first code
 * point, the number of code points, the kind (1: each maps to itself plus one delta; 2: pairs
 * mapping to each other) and the zigzag-encoded delta.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CATEGORY_ALIASES, canonicalName, categoryRanges, scriptNames, scriptRanges, simpleFoldNext, UNICODE_VERSION, type Range } from './go-unicode.ts';

const OUT = fileURLToPath(new URL('../policies/runtime/assembly/regex/unicode-tables.ts', import.meta.url));

/** General categories stored as tables; Cn is derived at run time. */
const LEAF_CATEGORIES = [
  'Cc', 'Cf', 'Co', 'Cs', 'Ll', 'Lm', 'Lo', 'Lt', 'Lu', 'Mc', 'Me', 'Mn', 'Nd', 'Nl', 'No',
  'Pc', 'Pd', 'Pe', 'Pf', 'Pi', 'Po', 'Ps', 'Sc', 'Sk', 'Sm', 'So', 'Zl', 'Zp', 'Zs',
];

class Bytes {
  readonly data: number[] = [];

  varint(n: number): void {
    if (n < 0) throw new Error(`negative varint ${n}`);
    while (n >= 0x80) {
      this.data.push((n & 0x7f) | 0x80);
      n = Math.floor(n / 128);
    }
    this.data.push(n);
  }

  ranges(ranges: Range[]): void {
    this.varint(ranges.length);
    let prev = -1;
    for (const [lo, hi] of ranges) {
      this.varint(lo - prev - 1);
      this.varint(hi - lo);
      prev = hi;
    }
  }

  /**
   * The fold map as disjoint runs of consecutive code points: either each one's next orbit member
   * is the same distance away (kind 1), or they alternate upper and lower case in pairs, the first
   * of each pair folding to the one after it and back (kind 2).
   */
  folds(next: Map<number, number>): number {
    const points = [...next.keys()].sort((a, b) => a - b);
    const runs: Array<{ start: number; count: number; kind: number; delta: number }> = [];
    let covered = -1;
    for (const c of points) {
      if (c <= covered) continue;
      const delta = next.get(c)! - c;
      let same = 1;
      while (next.get(c + same) === c + same + delta) same++;
      let paired = 0;
      while (next.get(c + paired) === c + paired + 1 && next.get(c + paired + 1) === c + paired) paired += 2;
      const run = paired > same ? { start: c, count: paired, kind: 2, delta: 0 } : { start: c, count: same, kind: 1, delta };
      runs.push(run);
      covered = c + run.count - 1;
    }
    this.varint(runs.length);
    let prev = 0;
    for (const run of runs) {
      this.varint(run.start - prev);
      this.varint(run.count);
      this.varint(run.kind);
      this.varint(run.delta < 0 ? -2 * run.delta - 1 : 2 * run.delta);
      prev = run.start;
    }
    return runs.length;
  }
}

const bytes = new Bytes();
const names: string[] = [];
const offsets: number[] = [];
const addTable = (name: string, ranges: Range[]): void => {
  name = canonicalName(name);
  if (names.includes(name)) throw new Error(`two tables are named ${name}`);
  names.push(name);
  offsets.push(bytes.data.length);
  bytes.ranges(ranges);
};
for (const category of LEAF_CATEGORIES) addTable(category, await categoryRanges(category));
for (const script of await scriptNames()) addTable(script, await scriptRanges(script));
const foldOffset = bytes.data.length;
const foldRuns = bytes.folds(await simpleFoldNext());

const nameBytes = [...Buffer.from(names.join(' '), 'ascii')];
const aliasBytes = [...Buffer.from(Object.entries(CATEGORY_ALIASES).map(([alias, short]) => `${canonicalName(alias)} ${canonicalName(short)}`).join(' '), 'ascii')];
// One block: the names, each table's offset in the data (u16), the data, then the category
// aliases; padded to 8 bytes.
const offsetsAt = (nameBytes.length + 1) & ~1;
const dataAt = offsetsAt + 2 * offsets.length;
const aliasesAt = dataAt + bytes.data.length;
const size = (aliasesAt + aliasBytes.length + 7) & ~7;
const block = Buffer.alloc(size);
block.set(nameBytes, 0);
offsets.forEach((offset, i) => block.writeUInt16LE(offset, offsetsAt + 2 * i));
block.set(bytes.data, dataAt);
block.set(aliasBytes, aliasesAt);
const stores: string[] = [];
for (let at = 0; at < size; at += 8) {
  stores.push(`  store<u64>(p, 0x${block.readBigUInt64LE(at).toString(16)}, ${at});`);
}

writeFileSync(
  OUT,
  `// Generated by scripts/generate-unicode-tables.ts from the Unicode ${UNICODE_VERSION} data Go carries; do not
// edit. Regenerate with
//   node --import=./scripts/register-typescript.js scripts/generate-unicode-tables.ts
// The encoding is described in that script.

/** Number of range tables: the leaf general categories, then the scripts. */
export const TABLE_COUNT: i32 = ${names.length};

/** Number of leaf general categories (the first tables). */
export const CATEGORY_COUNT: i32 = ${LEAF_CATEGORIES.length};

/** Byte length of the block \`writeTables\` writes (a multiple of 8). */
export const TABLES_SIZE: i32 = ${size};

/** Where the block holds the tables' names (canonical): ASCII, separated by one space, in table order. */
export const TABLE_NAMES: i32 = 0;

/** Byte length of the names. */
export const TABLE_NAMES_LENGTH: i32 = ${nameBytes.length};

/** Where the block holds each table's offset in the data, a u16. */
export const TABLE_OFFSETS: i32 = ${offsetsAt};

/** Where the block holds the data: the range tables and the fold table, varint-encoded. */
export const TABLE_DATA: i32 = ${dataAt};

/**
 * Where the block holds the category aliases: canonical alias and canonical short name, every
 * name separated by one space (\`Letter L Casedletter Lc …\`).
 */
export const CATEGORY_ALIASES: i32 = ${aliasesAt};

/** Byte length of the category aliases. */
export const CATEGORY_ALIASES_LENGTH: i32 = ${aliasBytes.length};

/** Offset in the data of the fold table (${foldRuns} runs). */
export const FOLD_OFFSET: i32 = ${foldOffset};

/**
 * Writes the block of tables at \`p\`, 8-byte aligned. It is code rather than a data segment so
 * that a module whose policy uses no regular expression does not carry it: linking drops the
 * functions a policy never reaches, but keeps every data segment.
 */
export function writeTables(p: usize): void {
${stores.join('\n')}
}
`,
);
process.stdout.write(`wrote ${OUT}: ${names.length} tables, ${foldRuns} fold runs, ${size} bytes\n`);
