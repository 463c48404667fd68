/**
 * Writes policies/runtime/assembly/regex/unicode-tables.ts: the Unicode data the policy runtime's
 * regular expressions need, derived from the Unicode database of the Node.js that runs this script
 * (its regular expressions), never typed by hand.
 *
 *   node --import=./scripts/register-typescript.js scripts/generate-unicode-tables.ts
 *
 * - General categories: the leaf categories (Lu, Ll, …) but Cn, which the runtime derives as
 *   what no other category holds; `\pL`, `\p{L}` and the like are unions the runtime forms.
 * - Scripts: the scripts Go's `unicode.Scripts` names (as listed by re2js, a port of Go's
 *   regexp with Go's tables), each with the code points Node's `\p{Script=…}` gives it.
 * - Case folding: Go's `unicode.SimpleFold` orbits, the classes of code points that are equal
 *   under Unicode simple case folding. A JavaScript regular expression with the `iu` flags compares
 *   code points under exactly that folding, so each orbit is what such an expression of one of
 *   its code points matches.
 *
 * Encoding (all in one block of bytes, unsigned LEB128 varints): a range table is a count, then for
 * each range the gap from the end of the previous one (from -1 for the first) and its length
 * minus one. The fold table maps each code point to the next one of its orbit (the smallest
 * greater one, or the smallest of all from the greatest) as disjoint runs of consecutive code
 * points: a count of runs, then for each run the distance from the previous run's first code
 * point, the number of code points, the kind (1: each maps to itself plus one delta; 2: pairs
 * mapping to each other) and the zigzag-encoded delta.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const MAX_RUNE = 0x10ffff;
const OUT = fileURLToPath(new URL('../policies/runtime/assembly/regex/unicode-tables.ts', import.meta.url));

/** General categories stored as tables; Cn is derived at run time. */
const LEAF_CATEGORIES = [
  'Cc', 'Cf', 'Co', 'Cs', 'Ll', 'Lm', 'Lo', 'Lt', 'Lu', 'Mc', 'Me', 'Mn', 'Nd', 'Nl', 'No',
  'Pc', 'Pd', 'Pe', 'Pf', 'Pi', 'Po', 'Ps', 'Sc', 'Sk', 'Sm', 'So', 'Zl', 'Zp', 'Zs',
];

type Range = [number, number];

/** The ranges of code points a one-code-point expression matches. */
function rangesOf(re: RegExp): Range[] {
  const out: Range[] = [];
  let lo = -1;
  for (let c = 0; c <= MAX_RUNE; c++) {
    const hit = re.test(String.fromCodePoint(c));
    if (hit && lo < 0) lo = c;
    if (!hit && lo >= 0) {
      out.push([lo, c - 1]);
      lo = -1;
    }
  }
  if (lo >= 0) out.push([lo, MAX_RUNE]);
  return out;
}

/** Go's script names, as re2js (which carries Go's tables) lists them. */
function goScriptNames(): string[] {
  const path = createRequire(import.meta.url).resolve('re2js');
  const source = readFileSync(path.replace(/[^/]*$/, 'index.js'), 'utf8');
  const block = source.slice(source.indexOf('static SCRIPTS = '), source.indexOf('static FOLD_CATEGORIES'));
  const names = [...block.matchAll(/^\s+(\w+): \(\)/gm)].map((m) => m[1]!);
  if (names.length < 150) throw new Error(`found only ${names.length} script names in re2js`);
  return names;
}

/** Go's SimpleFold as a map from each folding code point to the next one of its orbit. */
function foldNext(): Map<number, number> {
  // Every code point with a case mapping, and every one a mapping reaches, may fold.
  const candidates = new Set<number>();
  const cased = /\p{Changes_When_Casemapped}/u;
  for (let c = 0; c <= MAX_RUNE; c++) {
    const s = String.fromCodePoint(c);
    if (!cased.test(s)) continue;
    candidates.add(c);
    for (const mapped of [s.toLowerCase(), s.toUpperCase()]) {
      const cps = [...mapped];
      if (cps.length === 1) candidates.add(cps[0]!.codePointAt(0)!);
    }
  }
  const all = [...candidates].sort((a, b) => a - b);
  const text = all.map((c) => String.fromCodePoint(c)).join('');
  const next = new Map<number, number>();
  for (const c of all) {
    if (next.has(c)) continue;
    const escaped = `\\u{${c.toString(16)}}`;
    const orbit = [...text.matchAll(new RegExp(escaped, 'giu'))].map((m) => m[0].codePointAt(0)!).sort((a, b) => a - b);
    if (orbit.length < 2) continue;
    orbit.forEach((member, i) => next.set(member, orbit[(i + 1) % orbit.length]!));
  }
  return next;
}

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
  names.push(name);
  offsets.push(bytes.data.length);
  bytes.ranges(ranges);
};
for (const category of LEAF_CATEGORIES) addTable(category, rangesOf(new RegExp(`^\\p{${category}}$`, 'u')));
for (const script of goScriptNames()) addTable(script, rangesOf(new RegExp(`^\\p{Script=${script}}$`, 'u')));
const foldOffset = bytes.data.length;
const foldRuns = bytes.folds(foldNext());

const nameBytes = [...Buffer.from(names.join(' '), 'ascii')];
// One block: the names, each table's offset in the data (u16), then the data; padded to 8 bytes.
const offsetsAt = (nameBytes.length + 1) & ~1;
const dataAt = offsetsAt + 2 * offsets.length;
const size = (dataAt + bytes.data.length + 7) & ~7;
const block = Buffer.alloc(size);
block.set(nameBytes, 0);
offsets.forEach((offset, i) => block.writeUInt16LE(offset, offsetsAt + 2 * i));
block.set(bytes.data, dataAt);
const stores: string[] = [];
for (let at = 0; at < size; at += 8) {
  stores.push(`  store<u64>(p, 0x${block.readBigUInt64LE(at).toString(16)}, ${at});`);
}

writeFileSync(
  OUT,
  `// Generated by scripts/generate-unicode-tables.ts from the Unicode ${process.versions.unicode} data of Node.js
// ${process.version}; do not edit. Regenerate with
//   node --import=./scripts/register-typescript.js scripts/generate-unicode-tables.ts
// The encoding is described in that script.

/** Number of range tables: the leaf general categories, then the scripts. */
export const TABLE_COUNT: i32 = ${names.length};

/** Number of leaf general categories (the first tables). */
export const CATEGORY_COUNT: i32 = ${LEAF_CATEGORIES.length};

/** Byte length of the block \`writeTables\` writes (a multiple of 8). */
export const TABLES_SIZE: i32 = ${size};

/** Where the block holds the tables' names: ASCII, separated by one space, in table order. */
export const TABLE_NAMES: i32 = 0;

/** Byte length of the names. */
export const TABLE_NAMES_LENGTH: i32 = ${nameBytes.length};

/** Where the block holds each table's offset in the data, a u16. */
export const TABLE_OFFSETS: i32 = ${offsetsAt};

/** Where the block holds the data: the range tables and the fold table, varint-encoded. */
export const TABLE_DATA: i32 = ${dataAt};

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
