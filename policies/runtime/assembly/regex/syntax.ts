// The RE2 syntax as Go's regexp/syntax parses it with its `Perl` flags (what `regexp.Compile`
// uses): a pattern's UTF-8 bytes to a tree of `Node`s, or null for a pattern Go refuses.
//
// Accepted: literals and escapes (`\a \f \n \r \t \v`, octal `\123`, `\x7f`, `\x{10ffff}`,
// escaped punctuation), `.`, `^ $ \A \z \b \B`, classes `[…]` with ranges, negation, POSIX
// `[:alpha:]`, Perl `\d \s \w` (and negations) and Unicode `\pL \p{Greek} \PL \p{^L}`, `\Q…\E`,
// groups `(…)`, `(?P<name>…)`, `(?<name>…)`, `(?:…)`, flags `(?imsU-imsU)` and `(?flags:…)`,
// alternation and repetition `* + ? {n} {n,} {n,m}` with lazy `?` forms. Refused like Go:
// backreferences, lookaround, stacked repetition (`a**`), repeat counts above 1000 (also
// nested: `(a{100}){20}`), invalid UTF-8, and nesting deeper than 1000.

import { decodeRune, runeSize, RUNE_ERROR } from "../builtins/utf8";
import { RuneClass } from "./rune-class";
import { addFoldedRange, addUnicodeClass, MAX_RUNE } from "./unicode";

// Parser flags (Go's FoldCase, DotNL, the inverse of OneLine, NonGreedy).
const FLAG_FOLD: i32 = 1;
const FLAG_DOT_NL: i32 = 2;
const FLAG_MULTI_LINE: i32 = 4;
const FLAG_NON_GREEDY: i32 = 8;

// Conditions of empty-width assertions, tested against the code points around a position.
export const EMPTY_BEGIN_LINE: i32 = 1;
export const EMPTY_END_LINE: i32 = 2;
export const EMPTY_BEGIN_TEXT: i32 = 4;
export const EMPTY_END_TEXT: i32 = 8;
export const EMPTY_WORD_BOUNDARY: i32 = 16;
export const EMPTY_NO_WORD_BOUNDARY: i32 = 32;

// Node kinds.
export const OP_EMPTY: i32 = 0; // matches the empty string
export const OP_CHARS: i32 = 1; // one code point of `chars`
export const OP_ASSERT: i32 = 2; // empty-width assertion `assertion`
export const OP_CAPTURE: i32 = 3; // group `cap` around subs[0]
export const OP_CONCAT: i32 = 4;
export const OP_ALTERNATE: i32 = 5;
export const OP_STAR: i32 = 6;
export const OP_PLUS: i32 = 7;
export const OP_QUEST: i32 = 8;
export const OP_REPEAT: i32 = 9; // subs[0] from `min` to `max` times (-1: no maximum)

/** RE2's limit on repeat counts, including the product of nested counts. */
const MAX_REPEAT: i32 = 1000;
/** Go's limit on how deeply groups nest. */
const MAX_DEPTH: i32 = 1000;

/** A node of the parsed expression. */
export class Node {
  subs: Array<Node> = new Array<Node>();
  chars: RuneClass | null = null;
  /** Where the program holds `chars`' ranges once compiled (program.ts), or -1. */
  rangesAt: i32 = -1;
  assertion: i32 = 0;
  cap: i32 = 0;
  min: i32 = 0;
  max: i32 = 0;
  greedy: bool = true;

  constructor(public op: i32) {}

  static withSub(op: i32, sub: Node): Node {
    const n = new Node(op);
    n.subs.push(sub);
    return n;
  }

  /** Whether the node can match the empty string. */
  nullable(): bool {
    switch (this.op) {
      case OP_CHARS:
        return false;
      case OP_CAPTURE:
      case OP_PLUS:
        return this.subs[0].nullable();
      case OP_REPEAT:
        return this.min == 0 || this.subs[0].nullable();
      case OP_CONCAT:
        for (let i = 0; i < this.subs.length; i++) if (!this.subs[i].nullable()) return false;
        return true;
      case OP_ALTERNATE:
        for (let i = 0; i < this.subs.length; i++) if (this.subs[i].nullable()) return true;
        return false;
      default:
        return true;
    }
  }
}

/** The result of parsing: the tree, its number of groups and their names. */
export class Syntax {
  /** Capture groups, not counting the whole match. */
  groups: i32 = 0;
  /** For each group (index 0 unused): where its name starts in the pattern, or -1 if unnamed. */
  nameStarts: Array<i32> = [-1];
  nameLengths: Array<i32> = [0];

  constructor(public root: Node) {}
}

// Sorted ranges of the Perl and POSIX classes.
const DIGIT: StaticArray<i32> = [0x30, 0x39];
const SPACE_PERL: StaticArray<i32> = [0x09, 0x0a, 0x0c, 0x0d, 0x20, 0x20];
const WORD: StaticArray<i32> = [0x30, 0x39, 0x41, 0x5a, 0x5f, 0x5f, 0x61, 0x7a];
const POSIX_NAMES: StaticArray<string> = [
  "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space", "upper", "word", "xdigit",
];
const POSIX_RANGES: StaticArray<StaticArray<i32>> = [
  [0x30, 0x39, 0x41, 0x5a, 0x61, 0x7a],
  [0x41, 0x5a, 0x61, 0x7a],
  [0x00, 0x7f],
  [0x09, 0x09, 0x20, 0x20],
  [0x00, 0x1f, 0x7f, 0x7f],
  [0x30, 0x39],
  [0x21, 0x7e],
  [0x61, 0x7a],
  [0x20, 0x7e],
  [0x21, 0x2f, 0x3a, 0x40, 0x5b, 0x60, 0x7b, 0x7e],
  [0x09, 0x0d, 0x20, 0x20],
  [0x41, 0x5a],
  [0x30, 0x39, 0x41, 0x5a, 0x5f, 0x5f, 0x61, 0x7a],
  [0x30, 0x39, 0x41, 0x46, 0x61, 0x66],
];

// @ts-ignore: decorator
@inline
function isDigit(c: i32): bool {
  return c >= 0x30 && c <= 0x39;
}

// @ts-ignore: decorator
@inline
function isAlnum(c: i32): bool {
  return isDigit(c) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

function hexValue(c: i32): i32 {
  if (isDigit(c)) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

/** Whether a repetition and the repetitions inside it stay within `n` copies (Go's `repeatIsValid`). */
function repeatIsValid(node: Node, n: i32): bool {
  if (node.op == OP_REPEAT) {
    let m = node.max;
    if (m == 0) return true;
    if (m < 0) m = node.min;
    if (m > n) return false;
    if (m > 0) n /= m;
  }
  for (let i = 0; i < node.subs.length; i++) if (!repeatIsValid(node.subs[i], n)) return false;
  return true;
}

/** The class with every code point that folds to one of its own (Go's `appendFoldedClass`). */
function folded(c: RuneClass): RuneClass {
  const out = new RuneClass();
  const r = c.ranges;
  for (let i = 0; i < r.length; i += 2) addFoldedRange(out, r[i], r[i + 1]);
  out.clean();
  return out;
}

function classOf(ranges: StaticArray<i32>): RuneClass {
  const c = new RuneClass();
  for (let i = 0; i < ranges.length; i += 2) c.addRange(ranges[i], ranges[i + 1]);
  return c;
}

/** Parses the `len` bytes of a pattern at `data`; null when Go's regexp would refuse it. */
export function parse(data: usize, len: i32): Syntax | null {
  const p = new Parser(data, len);
  for (let at = data; at < p.end; at += <usize>runeSize) {
    if (decodeRune(at, p.end) == RUNE_ERROR && runeSize == 1) return null;
  }
  const root = p.parseAlternate();
  if (p.failed || p.pos < p.end) return null; // an unmatched ')'
  const syntax = new Syntax(Node.withSub(OP_CAPTURE, root));
  syntax.groups = p.groups;
  syntax.nameStarts = p.nameStarts;
  syntax.nameLengths = p.nameLengths;
  return syntax;
}

class Parser {
  pos: usize;
  end: usize;
  flags: i32 = 0;
  failed: bool = false;
  groups: i32 = 0;
  depth: i32 = 0;
  nameStarts: Array<i32> = [-1];
  nameLengths: Array<i32> = [0];

  constructor(public start: usize, len: i32) {
    this.pos = start;
    this.end = start + <usize>len;
  }

  fail(): Node {
    this.failed = true;
    return new Node(OP_EMPTY);
  }

  /** The byte at the current position plus `ahead`, or -1 past the end. */
  peek(ahead: i32 = 0): i32 {
    const at = this.pos + <usize>ahead;
    return at < this.end ? <i32>load<u8>(at) : -1;
  }

  nextRune(): i32 {
    const r = decodeRune(this.pos, this.end);
    this.pos += <usize>runeSize;
    return r;
  }

  /** `a|b|…` up to a `)` or the end. */
  parseAlternate(): Node {
    const first = this.parseConcat();
    if (this.peek() != 0x7c) return first;
    const alt = Node.withSub(OP_ALTERNATE, first);
    while (!this.failed && this.peek() == 0x7c) {
      this.pos++;
      alt.subs.push(this.parseConcat());
    }
    return alt;
  }

  parseConcat(): Node {
    const items = new Array<Node>();
    let afterRepeat = false;
    while (!this.failed && this.pos < this.end) {
      const c = this.peek();
      if (c == 0x7c || c == 0x29) break; // | )
      if (c == 0x2a || c == 0x2b || c == 0x3f) { // * + ?
        this.pos++;
        this.repeat(items, c == 0x2a ? OP_STAR : c == 0x2b ? OP_PLUS : OP_QUEST, 0, 0, afterRepeat);
        afterRepeat = true;
        continue;
      }
      if (c == 0x7b && this.repeatBraces(items, afterRepeat)) { // {
        afterRepeat = true;
        continue;
      }
      afterRepeat = false;
      if (c == 0x5c && this.peek(1) == 0x51) { // \Q…\E: a repetition after it applies to its last code point
        this.quoted(items);
        continue;
      }
      if (c == 0x28) { // (
        const group = this.parseGroup();
        if (group) items.push(group);
        continue;
      }
      items.push(this.parseAtom());
    }
    if (items.length == 1) return items[0];
    const concat = new Node(items.length == 0 ? OP_EMPTY : OP_CONCAT);
    concat.subs = items;
    return concat;
  }

  /** Applies a repetition to the last item, after its optional lazy `?`. */
  repeat(items: Array<Node>, op: i32, min: i32, max: i32, afterRepeat: bool): void {
    let greedy = (this.flags & FLAG_NON_GREEDY) == 0;
    if (this.peek() == 0x3f) {
      this.pos++;
      greedy = !greedy;
    }
    if (afterRepeat || items.length == 0) {
      this.fail();
      return;
    }
    const node = Node.withSub(op, items.pop());
    node.min = min;
    node.max = max;
    node.greedy = greedy;
    if (op == OP_REPEAT && (min >= 2 || max >= 2) && !repeatIsValid(node, MAX_REPEAT)) {
      this.fail();
      return;
    }
    items.push(node);
  }

  /**
   * `{n}`, `{n,}` or `{n,m}` applied to the last item; false (nothing consumed) when the brace
   * does not start one, which makes it a literal.
   */
  repeatBraces(items: Array<Node>, afterRepeat: bool): bool {
    const start = this.pos;
    this.pos++;
    const min = this.parseInt();
    let max = min;
    if (min != -2 && this.peek() == 0x2c) {
      this.pos++;
      max = this.peek() == 0x7d ? -1 : this.parseInt();
    }
    if (min == -2 || max == -2 || this.peek() != 0x7d) {
      this.pos = start;
      return false;
    }
    this.pos++;
    if (min < 0 || min > MAX_REPEAT || max > MAX_REPEAT || (max >= 0 && min > max)) {
      this.fail();
      return true;
    }
    this.repeat(items, OP_REPEAT, min, max, afterRepeat);
    return true;
  }

  /** A decimal repeat count (Go's `parseInt`): -2 if there is none, -1 if it is too large. */
  parseInt(): i32 {
    if (!isDigit(this.peek())) return -2;
    if (this.peek() == 0x30 && isDigit(this.peek(1))) return -2; // no leading zeros
    let n = 0;
    while (isDigit(this.peek())) {
      if (n >= 0) n = n >= 100_000_000 ? -1 : n * 10 + this.peek() - 0x30;
      this.pos++;
    }
    return n;
  }

  /** A group: capturing, named, non-capturing or a flag setting (which returns null). */
  parseGroup(): Node | null {
    this.pos++;
    if (++this.depth > MAX_DEPTH) return this.fail();
    const saved = this.flags;
    let cap = 0;
    if (this.peek() == 0x3f) { // (?
      const named = this.peek(1) == 0x3c ? 2 : this.peek(1) == 0x50 && this.peek(2) == 0x3c ? 3 : 0;
      if (named > 0) {
        if (!this.parseName(<usize>named)) return this.fail();
        cap = this.groups;
      } else {
        this.pos++;
        const flags = this.parseFlags();
        if (flags < 0) return this.fail();
        this.flags = flags;
        if (load<u8>(this.pos - 1) == 0x29) { // (?flags) applies to the rest of the enclosing group
          this.depth--;
          return null;
        }
      }
    } else {
      cap = ++this.groups;
      this.nameStarts.push(-1);
      this.nameLengths.push(0);
    }
    const sub = this.parseAlternate();
    if (this.failed) return sub;
    if (this.peek() != 0x29) return this.fail();
    this.pos++;
    this.flags = saved;
    this.depth--;
    if (cap == 0) return sub;
    const node = Node.withSub(OP_CAPTURE, sub);
    node.cap = cap;
    return node;
  }

  /** `P<name>` or `<name>` after `(?` (`skip` bytes before the name): a new named group. */
  parseName(skip: usize): bool {
    const nameStart = this.pos + skip;
    let at = nameStart;
    while (at < this.end && load<u8>(at) != 0x3e) {
      const c = <i32>load<u8>(at);
      if (c != 0x5f && !isAlnum(c)) return false;
      at++;
    }
    if (at >= this.end || at == nameStart) return false;
    this.groups++;
    this.nameStarts.push(<i32>(nameStart - this.start));
    this.nameLengths.push(<i32>(at - nameStart));
    this.pos = at + 1;
    return true;
  }

  /**
   * The flags after `(?`: letters `imsU`, optionally `-` and more letters, ended by `:` or `)`
   * (consumed). -1 if malformed (Go's `parsePerlFlags`).
   */
  parseFlags(): i32 {
    let flags = this.flags;
    let negate = false;
    let sawFlag = false;
    while (this.pos < this.end) {
      const c = this.peek();
      this.pos++;
      let bit = 0;
      if (c == 0x69) bit = FLAG_FOLD;
      else if (c == 0x6d) bit = FLAG_MULTI_LINE;
      else if (c == 0x73) bit = FLAG_DOT_NL;
      else if (c == 0x55) bit = FLAG_NON_GREEDY;
      else if (c == 0x2d) {
        if (negate) return -1;
        negate = true;
        sawFlag = false;
        continue;
      } else if (c == 0x3a || c == 0x29) {
        return negate && !sawFlag ? -1 : flags;
      } else {
        return -1;
      }
      flags = negate ? flags & ~bit : flags | bit;
      sawFlag = true;
    }
    return -1;
  }

  parseAtom(): Node {
    const c = this.peek();
    if (c == 0x5b) return this.parseClass();
    if (c == 0x2e) { // .
      this.pos++;
      const chars = new RuneClass();
      if ((this.flags & FLAG_DOT_NL) != 0) {
        chars.addRange(0, MAX_RUNE);
      } else {
        chars.addRange(0, 0x09);
        chars.addRange(0x0b, MAX_RUNE);
      }
      return this.charsNode(chars);
    }
    if (c == 0x5e) { // ^
      this.pos++;
      return this.assertion((this.flags & FLAG_MULTI_LINE) != 0 ? EMPTY_BEGIN_LINE : EMPTY_BEGIN_TEXT);
    }
    if (c == 0x24) { // $
      this.pos++;
      return this.assertion((this.flags & FLAG_MULTI_LINE) != 0 ? EMPTY_END_LINE : EMPTY_END_TEXT);
    }
    if (c == 0x5c) return this.parseEscapeAtom();
    return this.literal(this.nextRune());
  }

  assertion(kind: i32): Node {
    const node = new Node(OP_ASSERT);
    node.assertion = kind;
    return node;
  }

  charsNode(chars: RuneClass): Node {
    const node = new Node(OP_CHARS);
    node.chars = chars;
    return node;
  }

  /** One code point, or its case-folding orbit under `(?i)`. */
  literal(r: i32): Node {
    const chars = new RuneClass();
    if ((this.flags & FLAG_FOLD) != 0) {
      addFoldedRange(chars, r, r);
      chars.clean();
    } else {
      chars.addRange(r, r);
    }
    return this.charsNode(chars);
  }

  /** A backslash outside a class (but `\Q`): an assertion, a class or an escaped code point. */
  parseEscapeAtom(): Node {
    const c = this.peek(1);
    if (c == 0x41) return this.skipped(2, this.assertion(EMPTY_BEGIN_TEXT)); // \A
    if (c == 0x7a) return this.skipped(2, this.assertion(EMPTY_END_TEXT)); // \z
    if (c == 0x62) return this.skipped(2, this.assertion(EMPTY_WORD_BOUNDARY)); // \b
    if (c == 0x42) return this.skipped(2, this.assertion(EMPTY_NO_WORD_BOUNDARY)); // \B
    const chars = new RuneClass();
    if (this.classEscape(chars)) {
      chars.clean();
      return this.charsNode(chars);
    }
    if (this.failed) return new Node(OP_EMPTY);
    this.pos++;
    const r = this.parseEscape();
    return this.failed ? new Node(OP_EMPTY) : this.literal(r);
  }

  skipped(n: i32, node: Node): Node {
    this.pos += <usize>n;
    return node;
  }

  /** `\Q…\E` (or to the end): literal text, one item per code point. */
  quoted(items: Array<Node>): void {
    this.pos += 2;
    while (this.pos < this.end) {
      if (this.peek() == 0x5c && this.peek(1) == 0x45) {
        this.pos += 2;
        return;
      }
      items.push(this.literal(this.nextRune()));
    }
  }

  /**
   * At a backslash: adds a Unicode class (`\pL`, `\p{…}`, `\P…`) or a Perl class (`\d \s \w` and
   * negations) to `to` and returns true; false (nothing consumed) for any other escape.
   */
  classEscape(to: RuneClass): bool {
    const c = this.peek(1);
    if (c == 0x70 || c == 0x50) return this.unicodeClass(to, c == 0x50);
    let ranges: StaticArray<i32> | null = null;
    const lower = c | 0x20;
    if (lower == 0x64) ranges = DIGIT;
    else if (lower == 0x73) ranges = SPACE_PERL;
    else if (lower == 0x77) ranges = WORD;
    if (ranges === null) return false;
    this.pos += 2;
    this.addGroup(to, classOf(ranges), c != lower);
    return true;
  }

  /** Adds a Perl, POSIX or Unicode class, folded under `(?i)` before any negation. */
  addGroup(to: RuneClass, group: RuneClass, negated: bool): void {
    group.clean();
    const g = (this.flags & FLAG_FOLD) != 0 ? folded(group) : group;
    if (negated) g.negate();
    to.addClass(g);
  }

  /** `\pN`, `\p{Name}`, `\p{^Name}` and the `\P` negations (Go's `parseUnicodeClass`). */
  unicodeClass(to: RuneClass, negated: bool): bool {
    this.pos += 2;
    if (this.pos >= this.end) {
      this.fail();
      return true;
    }
    let name = this.pos;
    let nameEnd: usize;
    if (this.peek() != 0x7b) {
      this.nextRune();
      nameEnd = this.pos;
    } else {
      nameEnd = ++name;
      while (nameEnd < this.end && load<u8>(nameEnd) != 0x7d) nameEnd++;
      if (nameEnd >= this.end) {
        this.fail();
        return true;
      }
      this.pos = nameEnd + 1;
    }
    if (nameEnd > name && load<u8>(name) == 0x5e) {
      negated = !negated;
      name++;
    }
    const group = new RuneClass();
    if (!addUnicodeClass(group, name, <i32>(nameEnd - name))) {
      this.fail();
      return true;
    }
    this.addGroup(to, group, negated);
    return true;
  }

  /** The code point of an escape, the position just after its backslash (Go's `parseEscape`). */
  parseEscape(): i32 {
    if (this.pos >= this.end) return this.failCode();
    const c = this.nextRune();
    if (c >= 0x31 && c <= 0x37 && !(this.peek() >= 0x30 && this.peek() <= 0x37)) return this.failCode(); // backreference
    if (c >= 0x30 && c <= 0x37) {
      let r = c - 0x30;
      for (let i = 1; i < 3 && this.peek() >= 0x30 && this.peek() <= 0x37; i++) r = r * 8 + this.nextRune() - 0x30;
      return r;
    }
    if (c == 0x78) return this.hexEscape(); // x
    if (c == 0x61) return 0x07;
    if (c == 0x66) return 0x0c;
    if (c == 0x6e) return 0x0a;
    if (c == 0x72) return 0x0d;
    if (c == 0x74) return 0x09;
    if (c == 0x76) return 0x0b;
    if (c < 0x80 && !isAlnum(c)) return c;
    return this.failCode();
  }

  /** `\xHH` or `\x{H…}`, after the x. */
  hexEscape(): i32 {
    if (this.peek() == 0x7b) {
      this.pos++;
      let r = 0;
      let digits = 0;
      while (hexValue(this.peek()) >= 0) {
        r = r * 16 + hexValue(this.peek());
        if (r > MAX_RUNE) return this.failCode();
        digits++;
        this.pos++;
      }
      if (digits == 0 || this.peek() != 0x7d) return this.failCode();
      this.pos++;
      return r;
    }
    const hi = hexValue(this.peek());
    const lo = hexValue(this.peek(1));
    if (hi < 0 || lo < 0) return this.failCode();
    this.pos += 2;
    return hi * 16 + lo;
  }

  failCode(): i32 {
    this.failed = true;
    return 0;
  }

  /** `[…]` or `[^…]` (Go's `parseClass`). */
  parseClass(): Node {
    this.pos++;
    let negated = false;
    if (this.peek() == 0x5e) {
      negated = true;
      this.pos++;
    }
    const chars = new RuneClass();
    let first = true;
    while (!this.failed && (first || this.peek() != 0x5d)) {
      if (this.pos >= this.end) return this.fail();
      first = false;
      if (this.peek() == 0x5b && this.peek(1) == 0x3a && this.posixClass(chars)) continue;
      if (this.peek() == 0x5c && this.classEscape(chars)) continue;
      const lo = this.classChar();
      let hi = lo;
      if (this.peek() == 0x2d && this.peek(1) != 0x5d && this.peek(1) != -1) {
        this.pos++;
        hi = this.classChar();
        if (hi < lo) return this.fail();
      }
      if ((this.flags & FLAG_FOLD) != 0) addFoldedRange(chars, lo, hi);
      else chars.addRange(lo, hi);
    }
    if (this.failed) return new Node(OP_EMPTY);
    this.pos++;
    chars.clean();
    if (negated) chars.negate();
    return this.charsNode(chars);
  }

  classChar(): i32 {
    if (this.pos >= this.end) return this.failCode();
    if (this.peek() == 0x5c) {
      this.pos++;
      return this.parseEscape();
    }
    return this.nextRune();
  }

  /**
   * `[:name:]` or `[:^name:]` inside a class: adds it and returns true. False (nothing consumed)
   * when no `:]` follows; a name Go does not know fails the pattern.
   */
  posixClass(to: RuneClass): bool {
    let close = this.pos + 2;
    while (close + 1 < this.end && !(load<u8>(close) == 0x3a && load<u8>(close + 1) == 0x5d)) close++;
    if (close + 1 >= this.end) return false;
    let name = this.pos + 2;
    const negated = load<u8>(name) == 0x5e;
    if (negated) name++;
    const len = <i32>(close - name);
    this.pos = close + 2;
    for (let i = 0; i < POSIX_NAMES.length; i++) {
      const known = POSIX_NAMES[i];
      if (known.length != len) continue;
      let same = true;
      for (let j = 0; j < len && same; j++) same = <i32>load<u8>(name + <usize>j) == known.charCodeAt(j);
      if (same) {
        this.addGroup(to, classOf(POSIX_RANGES[i]), negated);
        return true;
      }
    }
    this.fail();
    return true;
  }
}
