// Reading the generated Unicode tables (unicode-tables.ts): named range tables for `\p{…}` and
// the case-folding orbits for `(?i)`, as Go's regexp/syntax uses `unicode.Categories`,
// `unicode.Scripts` and `unicode.SimpleFold`.

import { alloc, heapEpoch } from "../heap";
import {
  CATEGORY_ALIASES, CATEGORY_ALIASES_LENGTH, CATEGORY_COUNT, FOLD_OFFSET, TABLE_COUNT, TABLE_DATA, TABLE_NAMES, TABLE_NAMES_LENGTH, TABLE_OFFSETS, TABLES_SIZE,
  writeTables,
} from "./unicode-tables";
import { RuneClass } from "./rune-class";

export const MAX_RUNE: i32 = 0x10ffff;

// The generated tables, written onto the heap on first use in an evaluation (the host resets the
// heap between evaluations).
let tablesAt: usize = 0;
let tablesEpoch: u32 = 0;

/** Address of the block of generated tables (unicode-tables.ts lays it out). */
function tables(): usize {
  if (tablesAt == 0 || tablesEpoch != heapEpoch) {
    tablesAt = alloc(<usize>TABLES_SIZE);
    writeTables(tablesAt);
    tablesEpoch = heapEpoch;
  }
  return tablesAt;
}

/** Address of the next varint to read from the tables' data. */
let cursor: usize = 0;

/** Points `readVarint` at byte `offset` of the tables' data. */
function seek(offset: i32): void {
  cursor = tables() + <usize>TABLE_DATA + <usize>offset;
}

function readVarint(): i32 {
  let value: i32 = 0;
  let shift: i32 = 0;
  while (true) {
    const b = <i32>load<u8>(cursor++);
    value |= (b & 0x7f) << shift;
    if (b < 0x80) return value;
    shift += 7;
  }
}

/** Index of the generated table named by the bytes [name, name + len), or -1. */
function tableIndex(name: usize, len: i32): i32 {
  const names = tables() + <usize>TABLE_NAMES;
  let start = 0;
  for (let i = 0; i < TABLE_COUNT; i++) {
    let end = start;
    while (end < TABLE_NAMES_LENGTH && load<u8>(names + <usize>end) != 0x20) end++;
    if (end - start == len && memory.compare(names + <usize>start, name, <usize>len) == 0) return i;
    start = end + 1;
  }
  return -1;
}

/** Adds the ranges of generated table `index` to the class. */
function addTable(to: RuneClass, index: i32): void {
  seek(<i32>load<u16>(tables() + <usize>TABLE_OFFSETS + (<usize>index << 1)));
  const count = readVarint();
  let prev = -1;
  for (let i = 0; i < count; i++) {
    const lo = prev + 1 + readVarint();
    prev = lo + readVarint();
    to.addRange(lo, prev);
  }
}

/** Adds every leaf category whose name starts with `major` (one letter), or all when it is 0. */
function addCategories(to: RuneClass, major: u8): void {
  const names = tables() + <usize>TABLE_NAMES;
  let start = 0;
  for (let i = 0; i < CATEGORY_COUNT; i++) {
    if (major == 0 || load<u8>(names + <usize>start) == major) addTable(to, i);
    start += 3;
  }
}

/** Unassigned code points: those no other category holds. */
function addUnassigned(to: RuneClass): void {
  const assigned = new RuneClass();
  addCategories(assigned, 0);
  assigned.clean();
  assigned.negate();
  to.addClass(assigned);
}

/**
 * Adds the code points of the class named by the bytes [name, name + len) of `\p{name}` / `\pN`,
 * as Go's regexp/syntax (1.25 and later) finds it: the name compared after `canonicalName`
 * (`_`, `-` and spaces dropped, the first letter upper case, the rest lower case), then `Any`,
 * `Assigned`, `ASCII`, `LC`, a general category (one letter for the union of its subcategories,
 * `Cn` the unassigned code points), a script, or a category alias (`Letter`, `digit`). Returns
 * false for a name Go does not know.
 */
export function addUnicodeClass(to: RuneClass, name: usize, len: i32): bool {
  const canonical = alloc(<usize>max(len, 1));
  let n = 0;
  for (let i = 0; i < len; i++) {
    let c = load<u8>(name + <usize>i);
    if (c == 0x5f || c == 0x2d || c == 0x20) continue; // _ - space
    if (n == 0) {
      if (c >= 0x61 && c <= 0x7a) c -= 0x20;
    } else if (c >= 0x41 && c <= 0x5a) {
      c += 0x20;
    }
    store<u8>(canonical + <usize>n, c);
    n++;
  }
  return addCanonicalClass(to, canonical, n);
}

function named(name: usize, len: i32, known: usize, knownLen: i32): bool {
  return len == knownLen && memory.compare(name, known, <usize>len) == 0;
}

function addCanonicalClass(to: RuneClass, name: usize, len: i32): bool {
  if (named(name, len, changetype<usize>(ANY), 3)) {
    to.addRange(0, MAX_RUNE);
    return true;
  }
  if (named(name, len, changetype<usize>(ASSIGNED), 8)) {
    const unassigned = new RuneClass();
    addUnassigned(unassigned);
    unassigned.clean();
    unassigned.negate();
    to.addClass(unassigned);
    return true;
  }
  if (named(name, len, changetype<usize>(ASCII), 5)) {
    to.addRange(0, 0x7f);
    return true;
  }
  const first = load<u8>(name);
  if (len == 1 && (first == 0x43 || first == 0x4c || first == 0x4d || first == 0x4e || first == 0x50 || first == 0x53 || first == 0x5a)) {
    addCategories(to, first);
    if (first == 0x43) addUnassigned(to);
    return true;
  }
  if (named(name, len, changetype<usize>(CN), 2)) {
    addUnassigned(to);
    return true;
  }
  if (named(name, len, changetype<usize>(LC), 2)) { // Lu, Ll, Lt
    addCanonicalClass(to, changetype<usize>(LU), 2);
    addCanonicalClass(to, changetype<usize>(LL), 2);
    addCanonicalClass(to, changetype<usize>(LT), 2);
    return true;
  }
  const index = tableIndex(name, len);
  if (index >= 0) {
    addTable(to, index);
    return true;
  }
  // The aliases: pairs of names, every name followed by one space but the last.
  const aliases = tables() + <usize>CATEGORY_ALIASES;
  let at = 0;
  while (at < CATEGORY_ALIASES_LENGTH) {
    let end = at;
    while (load<u8>(aliases + <usize>end) != 0x20) end++;
    const target = end + 1;
    let targetEnd = target;
    while (targetEnd < CATEGORY_ALIASES_LENGTH && load<u8>(aliases + <usize>targetEnd) != 0x20) targetEnd++;
    if (named(name, len, aliases + <usize>at, end - at)) return addCanonicalClass(to, aliases + <usize>target, targetEnd - target);
    at = targetEnd + 1;
  }
  return false;
}

const ANY = memory.data<u8>([0x41, 0x6e, 0x79]);
const ASCII = memory.data<u8>([0x41, 0x73, 0x63, 0x69, 0x69]);
const CN = memory.data<u8>([0x43, 0x6e]);
const LC = memory.data<u8>([0x4c, 0x63]);
const ASSIGNED = memory.data<u8>([0x41, 0x73, 0x73, 0x69, 0x67, 0x6e, 0x65, 0x64]);
const LU = memory.data<u8>([0x4c, 0x75]);
const LL = memory.data<u8>([0x4c, 0x6c]);
const LT = memory.data<u8>([0x4c, 0x74]);

// ---------------------------------------------------------------------------------------------
// Case folding

// The fold runs, decoded once per evaluation onto the heap (the host resets the heap between
// evaluations): four i32 each, first code point, count, kind, delta to the next orbit member.
let foldRuns: usize = 0;
/** The kind of run whose code points map to each other in pairs (see the generator). */
const FOLD_PAIRS: i32 = 2;
let foldRunCount: i32 = 0;
let foldEpoch: u32 = 0;

function decodedFoldRuns(): usize {
  if (foldRuns != 0 && foldEpoch == heapEpoch) return foldRuns;
  seek(FOLD_OFFSET);
  foldRunCount = readVarint();
  foldRuns = alloc(<usize>foldRunCount << 4);
  let start = 0;
  for (let i = 0; i < foldRunCount; i++) {
    const run = foldRuns + (<usize>i << 4);
    start += readVarint();
    store<i32>(run, start);
    store<i32>(run, readVarint(), 4);
    store<i32>(run, readVarint(), 8);
    const zigzag = readVarint();
    store<i32>(run, (zigzag & 1) != 0 ? -((zigzag + 1) >> 1) : zigzag >> 1, 12);
  }
  foldEpoch = heapEpoch;
  return foldRuns;
}

/**
 * Go's `unicode.SimpleFold`: the next code point of `r`'s case-folding orbit (the smallest greater
 * one, wrapping around to the smallest), or `r` itself when it folds to nothing else.
 */
export function simpleFold(r: i32): i32 {
  const runs = decodedFoldRuns();
  const i = lastRunAtOrBefore(runs, r);
  if (i < 0) return r;
  const run = runs + (<usize>i << 4);
  const offset = r - load<i32>(run);
  if (offset >= load<i32>(run, 4)) return r;
  if (load<i32>(run, 8) == FOLD_PAIRS) return (offset & 1) == 0 ? r + 1 : r - 1;
  return r + load<i32>(run, 12);
}

/** Index of the last fold run starting at or before r, or -1. */
function lastRunAtOrBefore(runs: usize, r: i32): i32 {
  let lo = 0;
  let hi = foldRunCount - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (load<i32>(runs + (<usize>mid << 4)) <= r) lo = mid + 1;
    else hi = mid - 1;
  }
  return hi;
}

/** Adds every code point that folds to one in [lo, hi] (Go's `appendFoldedRange`). */
export function addFoldedRange(to: RuneClass, lo: i32, hi: i32): void {
  to.addRange(lo, hi);
  const runs = decodedFoldRuns();
  for (let i = max(lastRunAtOrBefore(runs, lo), 0); i < foldRunCount; i++) {
    const run = runs + (<usize>i << 4);
    const first = load<i32>(run);
    if (first > hi) break;
    const last = first + load<i32>(run, 4) - 1;
    if (last < lo) continue;
    for (let c = max(first, lo); c <= min(last, hi); c++) {
      for (let f = simpleFold(c); f != c; f = simpleFold(f)) to.addRange(f, f);
    }
  }
}

// Letters and decimal digits (categories L and Nd), built on first use in an evaluation.
let letterOrDigit: RuneClass | null = null;
let letterOrDigitEpoch: u32 = 0;

/** Go's `unicode.IsLetter(r) || unicode.IsDigit(r)`. */
export function isLetterOrDigit(r: i32): bool {
  if (r < 0x80) return (r >= 0x30 && r <= 0x39) || ((r | 0x20) >= 0x61 && (r | 0x20) <= 0x7a);
  let c = letterOrDigit;
  if (c === null || letterOrDigitEpoch != heapEpoch) {
    c = new RuneClass();
    addCategories(c, 0x4c);
    addCanonicalClass(c, changetype<usize>(ND), 2);
    c.clean();
    letterOrDigit = c;
    letterOrDigitEpoch = heapEpoch;
  }
  return c.contains(r);
}

const ND = memory.data<u8>([0x4e, 0x64]);
