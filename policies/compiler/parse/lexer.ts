/**
 * The Rego tokenizer: one forward pass over the source, producing tokens on demand.
 *
 * Whitespace and comments never become tokens. Instead each token records whether anything
 * separated it from the previous token, and whether that included a newline: the parser needs
 * the first to tell `f(x)` from `f (x)` and the second to find where a body literal ends.
 */
import { CompileError } from '../errors.ts';
import type { Pos } from './ast.ts';

export type TokenKind = 'ident' | 'keyword' | 'number' | 'string' | 'punct' | 'eof';

export interface Token {
  kind: TokenKind;
  /** The source text as written (strings keep their quotes). */
  text: string;
  /** A string's decoded value; for every other kind, the same as `text`. */
  value: string;
  pos: Pos;
  /** The position just past the token's last character. */
  end: Pos;
  /** Whitespace or a comment separates this token from the previous one. */
  spaceBefore: boolean;
  /** That separation contains a line break. */
  newlineBefore: boolean;
}

const KEYWORDS: ReadonlySet<string> = new Set([
  'package', 'import', 'default', 'if', 'else', 'contains', 'some', 'every', 'in', 'not', 'with',
  'as', 'true', 'false', 'null',
]);

const TWO_CHAR_PUNCT: ReadonlySet<string> = new Set([':=', '==', '!=', '<=', '>=']);
const ONE_CHAR_PUNCT = '=<>+-*/%&|()[]{},;:.';

const CH_TAB = 9;
const CH_LF = 10;
const CH_CR = 13;
const CH_SPACE = 32;
const CH_QUOTE = 34;
const CH_HASH = 35;
const CH_RPAREN = 41;
const CH_PLUS = 43;
const CH_MINUS = 45;
const CH_DOT = 46;
const CH_0 = 48;
const CH_9 = 57;
const CH_E_UPPER = 69;
const CH_BACKSLASH = 92;
const CH_RBRACKET = 93;
const CH_UNDERSCORE = 95;
const CH_BACKTICK = 96;
const CH_E_LOWER = 101;
const CH_U_LOWER = 117;
const CH_RBRACE = 125;
const BOM = 0xfeff;

const isDigit = (c: number): boolean => c >= CH_0 && c <= CH_9;
// Rego identifiers are ASCII only, like OPA's scanner.
const isIdentStart = (c: number): boolean =>
  (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === CH_UNDERSCORE;
const isIdentPart = (c: number): boolean => isIdentStart(c) || isDigit(c);

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t',
};

function hexValue(c: number): number {
  if (c >= CH_0 && c <= CH_9) return c - CH_0;
  if (c >= 65 && c <= 70) return c - 55;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/** Where the lexer stands, so a parser can rewind to a token it has already seen. */
export interface LexerMark {
  i: number;
  line: number;
  lineStart: number;
}

export class Lexer {
  private readonly file: string;
  private readonly source: string;
  private i: number;
  private line = 1;
  private lineStart: number;

  constructor(file: string, source: string) {
    this.file = file;
    this.source = source;
    // A byte order mark is invisible in editors, so columns start after it.
    this.i = this.lineStart = source.charCodeAt(0) === BOM ? 1 : 0;
  }

  mark(): LexerMark {
    return { i: this.i, line: this.line, lineStart: this.lineStart };
  }

  reset(mark: LexerMark): void {
    this.i = mark.i;
    this.line = mark.line;
    this.lineStart = mark.lineStart;
  }

  next(): Token {
    const { spaceBefore, newlineBefore } = this.skipTrivia();
    const start = this.i;
    const pos = this.pos();
    const src = this.source;
    let kind: TokenKind;
    let value: string | undefined;

    if (start >= src.length) {
      kind = 'eof';
    } else {
      const c = src.charCodeAt(start);
      if (isIdentStart(c)) {
        let j = start + 1;
        while (j < src.length && isIdentPart(src.charCodeAt(j))) j++;
        this.i = j;
        kind = KEYWORDS.has(src.slice(start, j)) ? 'keyword' : 'ident';
      } else if (isDigit(c) || this.atLeadingDotNumber(start)) {
        this.number(pos);
        kind = 'number';
      } else if (c === CH_QUOTE) {
        value = this.string(pos);
        kind = 'string';
      } else if (c === CH_BACKTICK) {
        value = this.rawString(pos);
        kind = 'string';
      } else {
        this.punct(pos);
        kind = 'punct';
      }
    }

    const text = src.slice(start, this.i);
    return { kind, text, value: value ?? text, pos, end: this.pos(), spaceBefore, newlineBefore };
  }

  /**
   * `.5` is a number only where a term may start: after a name or a closing bracket the dot
   * selects a key (`input.1` is a malformed ref, not `input` followed by 0.1).
   */
  private atLeadingDotNumber(at: number): boolean {
    const src = this.source;
    if (src.charCodeAt(at) !== CH_DOT || !isDigit(src.charCodeAt(at + 1))) return false;
    const before = src.charCodeAt(at - 1);
    return !(isIdentPart(before) || before === CH_RPAREN || before === CH_RBRACKET || before === CH_RBRACE);
  }

  private skipTrivia(): { spaceBefore: boolean; newlineBefore: boolean } {
    const src = this.source;
    const start = this.i;
    let newlineBefore = false;
    while (this.i < src.length) {
      const c = src.charCodeAt(this.i);
      if (c === CH_SPACE || c === CH_TAB || c === CH_CR) {
        this.i++;
      } else if (c === CH_LF) {
        this.i++;
        this.newLine(this.i);
        newlineBefore = true;
      } else if (c === CH_HASH) {
        const eol = src.indexOf('\n', this.i);
        this.i = eol === -1 ? src.length : eol;
      } else {
        break;
      }
    }
    return { spaceBefore: this.i > start, newlineBefore };
  }

  /** Numbers keep their source text; only the shape is checked here (as OPA's scanner does). */
  private number(pos: Pos): void {
    const src = this.source;
    const start = this.i;
    let j = start;
    while (isDigit(src.charCodeAt(j))) j++;
    if (j - start > 1 && src.charCodeAt(start) === CH_0) {
      this.fail(`invalid number '${src.slice(start, j)}': leading zeros are not allowed`, pos);
    }
    if (src.charCodeAt(j) === CH_DOT && isDigit(src.charCodeAt(j + 1))) {
      j += 2;
      while (isDigit(src.charCodeAt(j))) j++;
    }
    const e = src.charCodeAt(j);
    if (e === CH_E_LOWER || e === CH_E_UPPER) {
      let k = j + 1;
      const sign = src.charCodeAt(k);
      if (sign === CH_PLUS || sign === CH_MINUS) k++;
      if (!isDigit(src.charCodeAt(k))) {
        this.fail(`invalid number '${src.slice(start, k)}': expected digits after the exponent`, pos);
      }
      while (isDigit(src.charCodeAt(k))) k++;
      j = k;
    }
    if (isIdentPart(src.charCodeAt(j))) {
      this.fail(`invalid number '${src.slice(start, j + 1)}': expected a digit, found '${src[j]}'`, this.posAt(j));
    }
    this.i = j;
  }

  /** A double-quoted string with JSON escapes; returns the decoded value. */
  private string(pos: Pos): string {
    const src = this.source;
    let out = '';
    let j = this.i + 1;
    let chunk = j;
    for (;;) {
      const c = src.charCodeAt(j);
      if (j >= src.length || c === CH_LF) {
        const where = j >= src.length ? 'the end of the file' : 'the end of the line';
        this.fail(`unterminated string: expected a closing '"' before ${where}`, pos);
      }
      if (c === CH_QUOTE) break;
      if (c !== CH_BACKSLASH) {
        j++;
        continue;
      }
      const esc = src[j + 1];
      if (esc === undefined || esc === '\n') {
        j++;
        continue;
      }
      out += src.slice(chunk, j);
      const simple = SIMPLE_ESCAPES[esc];
      if (simple !== undefined) {
        out += simple;
        j += 2;
      } else if (esc === 'u') {
        const decoded = this.unicodeEscape(j);
        out += decoded.text;
        j = decoded.next;
      } else {
        this.fail(`invalid escape '\\${esc}' in string: expected one of \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX`, this.posAt(j));
      }
      chunk = j;
    }
    out += src.slice(chunk, j);
    this.i = j + 1;
    return out;
  }

  /**
   * Decodes the `\uXXXX` escape at `at`. A high surrogate directly followed by a `\u` low
   * surrogate forms one character; an unpaired surrogate becomes U+FFFD, as Go's JSON decoder (and
   * so OPA) does, which keeps the string valid UTF-16 and the rest of it intact.
   */
  private unicodeEscape(at: number): { text: string; next: number } {
    const src = this.source;
    const unit = this.hex4(at + 2);
    if (unit < 0) {
      this.fail(`invalid escape '${src.slice(at, at + 6)}' in string: expected four hex digits after '\\u'`, this.posAt(at));
    }
    const next = at + 6;
    if (unit >= 0xd800 && unit <= 0xdbff) {
      if (src.charCodeAt(next) === CH_BACKSLASH && src.charCodeAt(next + 1) === CH_U_LOWER) {
        const low = this.hex4(next + 2);
        if (low >= 0xdc00 && low <= 0xdfff) return { text: String.fromCharCode(unit, low), next: next + 6 };
      }
      return { text: '\ufffd', next };
    }
    if (unit >= 0xdc00 && unit <= 0xdfff) return { text: '\ufffd', next };
    return { text: String.fromCharCode(unit), next };
  }

  private hex4(at: number): number {
    let v = 0;
    for (let k = at; k < at + 4; k++) {
      const d = hexValue(this.source.charCodeAt(k));
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    return v;
  }

  /** A backtick string: no escapes, may span lines. */
  private rawString(pos: Pos): string {
    const src = this.source;
    const start = this.i + 1;
    let j = start;
    while (j < src.length && src.charCodeAt(j) !== CH_BACKTICK) {
      if (src.charCodeAt(j) === CH_LF) this.newLine(j + 1);
      j++;
    }
    if (j >= src.length) this.fail("unterminated raw string: expected a closing '`' before the end of the file", pos);
    this.i = j + 1;
    return src.slice(start, j);
  }

  private punct(pos: Pos): void {
    const src = this.source;
    const two = src.slice(this.i, this.i + 2);
    if (TWO_CHAR_PUNCT.has(two)) {
      this.i += 2;
      return;
    }
    const ch = src[this.i]!;
    if (ONE_CHAR_PUNCT.includes(ch)) {
      this.i += 1;
      return;
    }
    const cp = src.codePointAt(this.i)!;
    const shown = cp < 0x20 || cp === 0x7f ? `\\u${cp.toString(16).padStart(4, '0')}` : String.fromCodePoint(cp);
    const hint = ch === '!' ? " (use '!=' for inequality or 'not' for negation)" : '';
    this.fail(`unexpected character '${shown}'${hint}`, pos);
  }

  private newLine(lineStart: number): void {
    this.line++;
    this.lineStart = lineStart;
  }

  private pos(): Pos {
    return this.posAt(this.i);
  }

  /** Only valid for offsets on the current line. */
  private posAt(offset: number): Pos {
    return { file: this.file, line: this.line, col: offset - this.lineStart + 1, offset };
  }

  private fail(message: string, pos: Pos): never {
    throw new CompileError('parse', message, pos, this.source);
  }
}
