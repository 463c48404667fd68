// A compiled regular expression and Go's `allMatches` loop over it; compiled patterns are kept
// for the rest of the evaluation, so a rule calling `regex.match` with one pattern over many
// values parses and compiles it once.

import { heapEpoch } from "../heap";
import { Machine } from "./machine";
import { compile, Program } from "./program";
import { parse, Syntax } from "./syntax";
import { decodeRune, runeSize } from "../builtins/utf8";

/** A pattern compiled as Go's `regexp.Compile` would accept it. */
export class Regexp {
  private machines: Array<Machine> = new Array<Machine>();

  constructor(
    /** The pattern's bytes (immutable for the evaluation). */
    readonly pattern: usize,
    readonly patternLength: i32,
    readonly syntax: Syntax,
    private prog: Program,
  ) {}

  /** Capture slots of a match with all its groups: 2 per group, the whole match first. */
  get allSlots(): i32 {
    return (this.syntax.groups + 1) * 2;
  }

  /** A matcher tracking `slots` capture slots (0, 2, or `allSlots`), made on first use. */
  machine(slots: i32): Machine {
    for (let i = 0; i < this.machines.length; i++) {
      if (this.machines[i].slots == slots) return this.machines[i];
    }
    const m = new Machine(this.prog, slots);
    this.machines.push(m);
    return m;
  }

  /** Whether the text contains a match. */
  matches(text: usize, len: i32): bool {
    return this.machine(0).search(text, len, 0);
  }

  /**
   * The index of the group named by bytes [name, name + len) that took part in the last match of
   * `m`, or -1 (Go's `Expand` takes the first such group when names repeat).
   */
  namedGroup(m: Machine, name: usize, len: i32): i32 {
    const starts = this.syntax.nameStarts;
    const lengths = this.syntax.nameLengths;
    for (let g = 1; g <= this.syntax.groups; g++) {
      if (
        lengths[g] == len && starts[g] >= 0 && m.slot(2 * g) >= 0 &&
        memory.compare(this.pattern + <usize>starts[g], name, <usize>len) == 0
      ) return g;
    }
    return -1;
  }
}

/**
 * Go's `allMatches`: successive leftmost-first matches of `re` in a text, left to right, each
 * starting where the previous one ended, except that an empty match right where the previous
 * match ended is skipped and a search after an empty match starts one code point further.
 */
export class MatchIterator {
  readonly m: Machine;
  private pos: i32 = 0;
  private prevEnd: i32 = -1;

  constructor(re: Regexp, slots: i32, private text: usize, private len: i32) {
    this.m = re.machine(slots);
  }

  /** Finds the next match; its slots are then `m.slot(i)`. */
  next(): bool {
    while (this.pos <= this.len) {
      if (!this.m.search(this.text, this.len, this.pos)) return false;
      const start = this.m.slot(0);
      const end = this.m.slot(1);
      let accept = true;
      if (end == this.pos) {
        // An empty match here: not right after the previous match; the search moves on a code point.
        accept = start != this.prevEnd;
        if (this.pos < this.len) {
          decodeRune(this.text + <usize>this.pos, this.text + <usize>this.len);
          this.pos += runeSize;
        } else {
          this.pos = this.len + 1;
        }
      } else {
        this.pos = end;
      }
      this.prevEnd = end;
      if (accept) return true;
    }
    return false;
  }
}

// Patterns compiled during this evaluation (a small ring, reused from the start when full).
const CACHE_SIZE: i32 = 16;
const cache = new StaticArray<Regexp | null>(CACHE_SIZE);
let cacheEpoch: u32 = 0;
let cacheNext: i32 = 0;

/**
 * The compiled pattern whose bytes are [data, data + len), or null when Go's regexp refuses it.
 * Kept for the rest of the evaluation.
 */
export function compiled(data: usize, len: i32): Regexp | null {
  if (cacheEpoch != heapEpoch) {
    for (let i = 0; i < CACHE_SIZE; i++) unchecked((cache[i] = null));
    cacheEpoch = heapEpoch;
    cacheNext = 0;
  }
  for (let i = 0; i < CACHE_SIZE; i++) {
    const re = unchecked(cache[i]);
    if (re !== null && re.patternLength == len && memory.compare(re.pattern, data, <usize>len) == 0) return re;
  }
  const syntax = parse(data, len);
  if (syntax === null) return null;
  const re = new Regexp(data, len, syntax, compile(syntax));
  unchecked((cache[cacheNext] = re));
  cacheNext = (cacheNext + 1) % CACHE_SIZE;
  return re;
}
