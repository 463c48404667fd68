/**
 * OPA's `glob.match`, which uses the Go library gobwas/glob (v0.2). The pattern is translated
 * into an anchored JavaScript regular expression with the same meaning:
 *
 *   `*`       any run of characters that are not delimiters
 *   `**`      any run of characters, delimiters included
 *   `?`       one character that is not a delimiter
 *   `[abc]`   one of the listed characters; `[a-z]` one in the range; `[!…]` negates either
 *             (a class is a list *or* a single range, and matches delimiters too)
 *   `{a,b*}`  any of the comma-separated alternatives, each a pattern itself (nesting allowed)
 *   `\x`      the character x literally
 *
 * Everything else matches itself. Malformed patterns (an unclosed or empty class, a range whose
 * ends are reversed) are refused, like gobwas's compiler refuses them.
 */

/** The pattern is not a glob gobwas would compile. */
export class GlobSyntaxError extends Error {
  override readonly name = 'GlobSyntaxError';
}

// With the `u` flag only syntax characters may be escaped, and `-` only inside a class.
const REGEX_SPECIAL = /[\\^$.*+?()[\]{}|/]/g;
const CLASS_SPECIAL = /[\\^[\]-]/g;

function escapeRegex(text: string): string {
  return text.replace(REGEX_SPECIAL, '\\$&');
}

function escapeClassChar(text: string): string {
  return text.replace(CLASS_SPECIAL, '\\$&');
}

/** A translator over the pattern's code points, with gobwas's lexing rules. */
class GlobTranslator {
  private readonly chars: string[];
  private pos = 0;
  private readonly notDelimiter: string;

  constructor(pattern: string, delimiters: readonly string[]) {
    this.chars = [...pattern];
    this.notDelimiter = delimiters.length > 0 ? `[^${delimiters.map(escapeClassChar).join('')}]` : '[^]';
  }

  translate(): string {
    const body = this.sequence(0);
    return `^${body}$`;
  }

  /** A run of tokens up to the end, or (inside `depth` braces) up to an unconsumed `,` or `}`. */
  private sequence(depth: number): string {
    let out = '';
    while (this.pos < this.chars.length) {
      const c = this.chars[this.pos]!;
      if (depth > 0 && (c === ',' || c === '}')) return out;
      this.pos++;
      switch (c) {
        case '*':
          if (this.chars[this.pos] === '*') {
            this.pos++;
            out += '[^]*';
          } else {
            out += `${this.notDelimiter}*`;
          }
          break;
        case '?':
          out += this.notDelimiter;
          break;
        case '[':
          out += this.characterClass();
          break;
        case '{':
          out += this.alternatives(depth + 1);
          break;
        case '\\':
          // A trailing backslash escapes nothing; gobwas v0.2 drops it.
          if (this.pos < this.chars.length) out += escapeRegex(this.chars[this.pos++]!);
          break;
        default:
          out += escapeRegex(c);
      }
    }
    return out;
  }

  /** `{a,b,…}`; like gobwas v0.2, a group left open at the end of the pattern ends there. */
  private alternatives(depth: number): string {
    const options = [this.sequence(depth)];
    while (this.pos < this.chars.length && this.chars[this.pos] === ',') {
      this.pos++;
      options.push(this.sequence(depth));
    }
    if (this.chars[this.pos] === '}') this.pos++;
    return `(?:${options.join('|')})`;
  }

  /** After `[`: `[!]` then either `lo-hi` or a list of characters (escapes allowed), then `]`. */
  private characterClass(): string {
    let negated = false;
    if (this.chars[this.pos] === '!') {
      negated = true;
      this.pos++;
    }
    const first = this.chars[this.pos];
    if (first === undefined) throw new GlobSyntaxError('unexpected end of input in character class');
    let set: string;
    if (this.chars[this.pos + 1] === '-') {
      const lo = first;
      const hi = this.chars[this.pos + 2];
      if (hi === undefined) throw new GlobSyntaxError('unexpected end of input in character range');
      if (hi.codePointAt(0)! < lo.codePointAt(0)!) {
        throw new GlobSyntaxError(`hi character '${hi}' should be greater than lo '${lo}'`);
      }
      this.pos += 3;
      set = `${escapeClassChar(lo)}-${escapeClassChar(hi)}`;
    } else {
      set = '';
      while (this.pos < this.chars.length && this.chars[this.pos] !== ']') {
        let c = this.chars[this.pos++]!;
        if (c === '\\' && this.pos < this.chars.length) c = this.chars[this.pos++]!;
        set += escapeClassChar(c);
      }
      if (set === '') throw new GlobSyntaxError('empty character class');
    }
    if (this.chars[this.pos] !== ']') throw new GlobSyntaxError('expected close range character');
    this.pos++;
    return `[${negated ? '^' : ''}${set}]`;
  }
}

/**
 * Compiles a glob into a matcher. Throws GlobSyntaxError for a pattern gobwas refuses.
 * `delimiters` are single characters; an empty list means none.
 */
export function compileGlob(pattern: string, delimiters: readonly string[]): RegExp {
  return new RegExp(new GlobTranslator(pattern, delimiters).translate(), 'u');
}
