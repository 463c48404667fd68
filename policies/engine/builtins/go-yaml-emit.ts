/**
 * `yaml.marshal` as OPA writes it: the value's JSON read by go-yaml v2 and written back by its
 * emitter (sigs.k8s.io/yaml `JSONToYAML`). Block style with two-space indentation, sequences
 * under a key not indented, keys in go-yaml's natural order (`a2` before `a10`), `{}` and `[]` for
 * empty collections, and each string in the first style that reads back as that string: plain,
 * then single-quoted, double-quoted (with escapes), or a literal block for text with line breaks;
 * strings YAML 1.1 would read as something else (`"yes"`, `"1"`, `"2006-01-02"`) double-quoted.
 * Plain and quoted text folds at spaces past column 80, as the emitter does.
 *
 * go-yaml's emitter (libyaml's) decides each of these from a few facts about the text and the
 * column it writes at; this module tracks the same facts.
 */
import { isLosslessNumber, LosslessNumber, parse } from 'lossless-json';
import { goFormatFloat, isBase60Float, resolvePlain } from './go-yaml-scalars.ts';

/** Numbers as their JSON text (lossless-json): how go-yaml reads one (int or float) depends on how it was written. */
type Json = null | boolean | LosslessNumber | string | Json[] | { [key: string]: Json };

const BEST_WIDTH = 80;
const BEST_INDENT = 2;
/** A longer key, or one spanning lines, is written as a complex key (`? key`). */
const SIMPLE_KEY_MAX_BYTES = 128;

const SPACE = 0x20;
const isBreak = (c: number): boolean => c === 0x0a || c === 0x0d || c === 0x85 || c === 0x2028 || c === 0x2029;
const isBlank = (c: number | undefined): boolean => c === SPACE || c === 0x09;
const isPrintable = (c: number): boolean =>
  c === 0x0a || (c >= 0x20 && c <= 0x7e) || (c >= 0xa0 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd && c !== 0xfeff);

/**
 * Characters go-yaml's reader refuses in the JSON it is given (Go's JSON encoder escapes the
 * other control characters): a value holding one cannot be marshalled.
 */
const UNREADABLE = /[\u007f-\u0084\u0086-\u009f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

type Style = 'plain' | 'single' | 'double' | 'literal';

/** What the emitter's scalar analysis finds in a string (libyaml's `analyze_scalar`). */
interface Analysis {
  multiline: boolean;
  plainAllowed: boolean;
  singleQuotedAllowed: boolean;
  blockAllowed: boolean;
}

const FIRST_INDICATORS = new Set([...'#,[]{}&*!|>\'"%@`'].map((c) => c.codePointAt(0)!));

function analyze(chars: number[]): Analysis {
  if (chars.length === 0) return { multiline: false, plainAllowed: true, singleQuotedAllowed: true, blockAllowed: false };
  const text = String.fromCodePoint(...chars.slice(0, 3));
  let indicators = text === '---' || text === '...';
  let lineBreaks = false;
  let special = false;
  let leadingSpace = false;
  let leadingBreak = false;
  let trailingSpace = false;
  let trailingBreak = false;
  let breakSpace = false;
  let spaceBreak = false;
  let previousSpace = false;
  let previousBreak = false;
  let precededByWhitespace = true;
  const last = chars.length - 1;
  chars.forEach((c, i) => {
    const followedByWhitespace = i === last || isBlank(chars[i + 1]);
    if (i === 0) {
      if (FIRST_INDICATORS.has(c)) indicators = true;
      if ((c === 0x3f || c === 0x3a || c === 0x2d) && followedByWhitespace) indicators = true; // ? : -
    } else if ((c === 0x3a && followedByWhitespace) || (c === 0x23 && precededByWhitespace)) {
      indicators = true; // ": " and " #"
    }
    if (!isPrintable(c)) special = true;
    if (c === SPACE) {
      if (i === 0) leadingSpace = true;
      if (i === last) trailingSpace = true;
      if (previousBreak) breakSpace = true;
      previousSpace = true;
      previousBreak = false;
    } else if (isBreak(c)) {
      lineBreaks = true;
      if (i === 0) leadingBreak = true;
      if (i === last) trailingBreak = true;
      if (previousSpace) spaceBreak = true;
      previousSpace = false;
      previousBreak = true;
    } else {
      previousSpace = false;
      previousBreak = false;
    }
    precededByWhitespace = isBlank(c) || isBreak(c) || c === 0;
  });
  const unsafe = spaceBreak || special;
  return {
    multiline: lineBreaks,
    plainAllowed: !(leadingSpace || leadingBreak || trailingSpace || trailingBreak || breakSpace || unsafe || lineBreaks || indicators),
    singleQuotedAllowed: !(breakSpace || unsafe),
    blockAllowed: !(trailingSpace || unsafe),
  };
}

/** go-yaml's choice for a string: its encoder's wish, then what the emitter allows. */
function stringStyle(s: string, analysis: Analysis, simpleKey: boolean): Style {
  const readsBack = resolvePlain(s).kind === 'str' && !isBase60Float(s);
  let style: Style = s.includes('\n') ? 'literal' : readsBack ? 'plain' : 'double';
  if (style === 'plain' && !analysis.plainAllowed) style = 'single';
  if (style === 'single' && !analysis.singleQuotedAllowed) style = 'double';
  if (style === 'literal' && (!analysis.blockAllowed || simpleKey)) style = 'double';
  return style;
}

/** The escape of a character in a double-quoted scalar. */
function escape(c: number): string {
  const named: Record<number, string> = {
    0x00: '0', 0x07: 'a', 0x08: 'b', 0x09: 't', 0x0a: 'n', 0x0b: 'v', 0x0c: 'f', 0x0d: 'r', 0x1b: 'e',
    0x22: '"', 0x5c: '\\', 0x85: 'N', 0xa0: '_', 0x2028: 'L', 0x2029: 'P',
  };
  if (named[c] !== undefined) return `\\${named[c]}`;
  const hex = c.toString(16).toUpperCase();
  if (c <= 0xff) return `\\x${hex.padStart(2, '0')}`;
  if (c <= 0xffff) return `\\u${hex.padStart(4, '0')}`;
  return `\\U${hex.padStart(8, '0')}`;
}

/** Where a node is written: the document's root, after a simple key's `:`, or after `- `, `? ` or a complex key's `: `. */
type Position = 'root' | 'value' | 'compact';

/** go-yaml's natural key order (its `keyList.Less` for strings): runs of digits compare as numbers, non-letters sort before letters. */
function keyLess(a: string, b: string): boolean {
  const ar = Array.from(a, (c) => c.codePointAt(0)!);
  const br = Array.from(b, (c) => c.codePointAt(0)!);
  const isLetter = (c: number): boolean => /\p{L}/u.test(String.fromCodePoint(c));
  const isDigit = (c: number | undefined): boolean => c !== undefined && /\p{Nd}/u.test(String.fromCodePoint(c));
  for (let i = 0; i < ar.length && i < br.length; i++) {
    const [ac, bc] = [ar[i]!, br[i]!];
    if (ac === bc) continue;
    const [al, bl] = [isLetter(ac), isLetter(bc)];
    if (al && bl) return ac < bc;
    if (al || bl) return bl;
    let an = 0n;
    let bn = 0n;
    if (ac === 0x30 || bc === 0x30) {
      for (let j = i - 1; j >= 0 && isDigit(ar[j]); j--) {
        if (ar[j] !== 0x30) {
          an = 1n;
          bn = 1n;
          break;
        }
      }
    }
    let ai = i;
    for (; ai < ar.length && isDigit(ar[ai]); ai++) an = BigInt.asIntN(64, an * 10n + BigInt(ar[ai]! - 0x30));
    let bi = i;
    for (; bi < br.length && isDigit(br[bi]); bi++) bn = BigInt.asIntN(64, bn * 10n + BigInt(br[bi]! - 0x30));
    if (an !== bn) return an < bn;
    if (ai !== bi) return ai < bi;
    return ac < bc;
  }
  return ar.length < br.length;
}

/**
 * A number as go-yaml writes what it read from JSON: an integer (written without fraction or
 * exponent, within int64, or uint64 when positive) in decimal, anything else as a float in Go's
 * `%g` (`1e6` and `1000000.0` are `1e+06`).
 */
function numberText(n: LosslessNumber): string {
  if (/^-?\d+$/.test(n.value)) {
    const i = BigInt(n.value);
    if (i >= -(2n ** 63n) && i < 2n ** 64n) return i.toString();
  }
  return goFormatFloat(Number(n.value), 64);
}

/** The emitter: its output and the state libyaml keeps while writing. */
class Emitter {
  out = '';
  private column = 0;
  /** The last character written is white space (or nothing was written yet). */
  private whitespace = true;
  /** Only indentation has been written on the current line. */
  private indention = true;

  private put(c: string): void {
    this.out += c;
    this.column++;
  }

  private putBreak(): void {
    this.out += '\n';
    this.column = 0;
  }

  writeIndent(indent: number): void {
    const target = Math.max(indent, 0);
    if (!this.indention || this.column > target || (this.column === target && !this.whitespace)) this.putBreak();
    while (this.column < target) this.put(' ');
    this.whitespace = true;
    this.indention = true;
  }

  private indicator(text: string, needWhitespace: boolean, isWhitespace: boolean, isIndention: boolean): void {
    if (needWhitespace && !this.whitespace) this.put(' ');
    for (const c of text) this.put(c);
    this.whitespace = isWhitespace;
    this.indention = this.indention && isIndention;
  }

  /** A node whose parent collection is indented by `parentIndent` (-1 for the root). */
  node(value: Json, parentIndent: number, position: Position): void {
    if (Array.isArray(value)) return this.sequence(value, parentIndent, position);
    if (value !== null && typeof value === 'object' && !isLosslessNumber(value)) return this.mapping(value, parentIndent);
    const indent = parentIndent < 0 ? BEST_INDENT : parentIndent + BEST_INDENT;
    if (typeof value === 'string') return this.string(value, indent, false);
    const text = value === null ? 'null' : typeof value === 'boolean' ? String(value) : numberText(value);
    this.scalar(Array.from(text, (c) => c.codePointAt(0)!), 'plain', indent, true);
  }

  private empty(text: '[]' | '{}'): void {
    this.indicator(text[0]!, true, true, false);
    this.indicator(text[1]!, false, false, false);
  }

  private sequence(items: Json[], parentIndent: number, position: Position): void {
    if (items.length === 0) return this.empty('[]');
    // Under a simple key the dashes line up with the key.
    const indent = parentIndent < 0 ? 0 : position === 'value' ? parentIndent : parentIndent + BEST_INDENT;
    for (const item of items) {
      this.writeIndent(indent);
      this.indicator('-', true, false, true);
      this.node(item, indent, 'compact');
    }
  }

  private mapping(object: { [key: string]: Json }, parentIndent: number): void {
    const keys = Object.keys(object).sort((a, b) => (keyLess(a, b) ? -1 : keyLess(b, a) ? 1 : 0));
    if (keys.length === 0) return this.empty('{}');
    const indent = parentIndent < 0 ? 0 : parentIndent + BEST_INDENT;
    for (const key of keys) {
      this.writeIndent(indent);
      const chars = Array.from(key, (c) => c.codePointAt(0)!);
      if (!chars.some(isBreak) && Buffer.byteLength(key) <= SIMPLE_KEY_MAX_BYTES) {
        this.string(key, indent + BEST_INDENT, true);
        this.indicator(':', false, false, false);
        this.node(object[key]!, indent, 'value');
      } else {
        this.indicator('?', true, false, true);
        this.string(key, indent + BEST_INDENT, false);
        this.writeIndent(indent);
        this.indicator(':', true, false, true);
        this.node(object[key]!, indent, 'compact');
      }
    }
  }

  private string(s: string, indent: number, simpleKey: boolean): void {
    const chars = Array.from(s, (c) => c.codePointAt(0)!);
    this.scalar(chars, stringStyle(s, analyze(chars), simpleKey), indent, !simpleKey);
  }

  private scalar(chars: number[], style: Style, indent: number, allowBreaks: boolean): void {
    if (style === 'literal') return this.literal(chars, indent);
    const quote = style === 'single' ? "'" : style === 'double' ? '"' : '';
    if (quote) this.indicator(quote, true, false, false);
    else if (!this.whitespace) this.put(' ');
    let spaces = false;
    let breaks = false;
    chars.forEach((c, i) => {
      if (style === 'double' && (!isPrintable(c) || isBreak(c) || c === 0x22 || c === 0x5c)) {
        for (const e of escape(c)) this.put(e);
        spaces = false;
      } else if (c === SPACE) {
        const next = chars[i + 1];
        const inside = style === 'plain' || (i > 0 && i < chars.length - 1);
        const fold = allowBreaks && !spaces && this.column > BEST_WIDTH && inside && (style === 'double' || next !== SPACE);
        if (fold) {
          this.writeIndent(indent);
          // A double-quoted line starting with a space marks it with a backslash.
          if (style === 'double' && next === SPACE) this.put('\\');
        } else {
          this.put(' ');
        }
        spaces = true;
      } else if (isBreak(c)) {
        // Only single-quoted text gets here, for U+2028 and U+2029.
        this.lineBreak(c);
        breaks = true;
      } else {
        this.text(style === 'single' && c === 0x27 ? "''" : String.fromCodePoint(c), indent, breaks);
        spaces = false;
        breaks = false;
      }
    });
    if (quote) this.indicator(quote, false, false, false);
    this.whitespace = false;
    this.indention = false;
  }

  /** A literal block (`|`), with an indentation hint for text starting with a space or a break and the chomping that keeps its final breaks. */
  private literal(chars: number[], indent: number): void {
    this.indicator('|', true, false, false);
    if (chars[0] === SPACE || isBreak(chars[0]!)) this.indicator(String(BEST_INDENT), false, false, false);
    const last = chars.length - 1;
    if (!isBreak(chars[last]!)) this.indicator('-', false, false, false);
    else if (last === 0 || isBreak(chars[last - 1]!)) this.indicator('+', false, false, false);
    this.putBreak();
    this.indention = true;
    this.whitespace = true;
    let breaks = true;
    for (const c of chars) {
      if (isBreak(c)) this.lineBreak(c);
      else this.text(String.fromCodePoint(c), indent, breaks);
      breaks = isBreak(c);
    }
  }

  /** A line break of a scalar's text: `\n` starts a line, another break is written as it is. */
  private lineBreak(c: number): void {
    if (c === 0x0a) {
      this.putBreak();
    } else {
      this.out += String.fromCodePoint(c);
      this.column = 0;
    }
    this.indention = true;
  }

  /** Text of a scalar, indented first when it starts a line after a break. */
  private text(text: string, indent: number, afterBreak: boolean): void {
    if (afterBreak) this.writeIndent(indent);
    for (const c of text) this.put(c);
    this.indention = false;
  }
}

/**
 * `yaml.marshal(x)` for the JSON text of a value (sets as arrays), as the module hands it over
 * (`hostTakesJsonText` in policies/compiler/builtins.ts): its numbers as written, so go-yaml's
 * reading of each as an int or a float is OPA's. Undefined for text go-yaml would refuse to read
 * (some control characters) and for numbers beyond the float range.
 */
export function yamlMarshal(jsonText: string): string | undefined {
  let value: Json;
  try {
    value = parse(jsonText) as Json;
  } catch {
    return undefined;
  }
  const readable = (v: Json): boolean => {
    if (typeof v === 'string') return !UNREADABLE.test(v);
    if (isLosslessNumber(v)) return Number.isFinite(Number(v.value));
    if (Array.isArray(v)) return v.every(readable);
    if (v !== null && typeof v === 'object') return Object.entries(v).every(([k, x]) => !UNREADABLE.test(k) && readable(x));
    return true;
  };
  if (!readable(value)) return undefined;
  const emitter = new Emitter();
  emitter.node(value, -1, 'root');
  emitter.writeIndent(-1);
  return emitter.out;
}
