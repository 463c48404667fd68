/**
 * `opa fmt` for Gatehouse: a module printed from its AST (print.ts) with its comments put back.
 *
 * Comments are not in the AST, so they are found between tokens and placed by position: a
 * comment alone on its line goes before the statement or body literal that follows it, one after
 * code on its line stays at the end of that line's statement or literal. A comment inside a
 * multi-line term ends up after the literal holding it.
 *
 * The output is checked before it is returned: it must parse to the same AST (positions aside)
 * and keep every comment, or formatting is refused with FormatError rather than change a policy.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Body, Module, Pos } from '../parse/ast.ts';
import { parseModule } from '../parse/index.ts';
import { Lexer } from '../parse/lexer.ts';
import { printImport, printLiteral, printPackage, printRule } from './print.ts';

/** The module cannot be formatted without changing what it says. */
export class FormatError extends Error {}

interface Comment {
  text: string;
  offset: number;
  /** 1-based. */
  line: number;
  /** Code precedes it on its line. */
  trailing: boolean;
}

function commentsOf(file: string, source: string): Comment[] {
  const comments: Comment[] = [];
  const lexer = new Lexer(file, source);
  let end = 0;
  for (;;) {
    const tok = lexer.next();
    const gap = source.slice(end, tok.pos.offset);
    let from = 0;
    for (let hash = gap.indexOf('#'); hash >= 0; hash = gap.indexOf('#', from)) {
      const eol = gap.indexOf('\n', hash);
      from = eol < 0 ? gap.length : eol;
      const before = gap.slice(0, hash).lastIndexOf('\n');
      comments.push({
        text: gap.slice(hash, from).trimEnd(),
        offset: end + hash,
        line: source.slice(0, end + hash).split('\n').length,
        trailing: before < 0 && end > 0,
      });
    }
    if (tok.kind === 'eof') return comments;
    end = tok.end.offset;
  }
}

/** The AST without positions and source text, to compare a module with its formatted text. */
function shape(module: Module): unknown {
  return JSON.parse(JSON.stringify({ ...module, file: '', source: '', packagePos: null }, (key, value: unknown) => (key === 'pos' ? undefined : value)));
}

/** Builds the formatted text line by line, taking comments in source order as it goes. */
class Writer {
  private readonly lines: string[] = [];
  private next = 0;

  private readonly sourceLines: string[];

  constructor(
    private readonly comments: Comment[],
    source: string,
  ) {
    this.sourceLines = source.split('\n');
  }

  /**
   * Emits the comments before `offset`: own-line ones at `indent`, trailing ones after the last
   * line, if there is one past `floor` (a body's lines are written before its rule's head).
   */
  commentsBefore(offset: number, indent: string, floor = 0): void {
    while (this.next < this.comments.length && this.comments[this.next]!.offset < offset) {
      const c = this.comments[this.next++]!;
      if (c.trailing && this.lines.length > floor) this.lines[this.lines.length - 1] += ` ${c.text}`;
      else this.lines.push(`${indent}${c.text}`);
    }
  }

  /**
   * A top-level statement starting at `pos`, after a blank line when the source had one before
   * it or before the comments that lead it.
   */
  statement(pos: Pos, text: () => string, blankBefore = false): void {
    const leading = this.comments.slice(this.next).find((c) => c.offset < pos.offset && !c.trailing);
    const first = leading?.line ?? pos.line;
    if (this.lines.length > 0 && (blankBefore || (first >= 2 && this.sourceLines[first - 2]!.trim() === ''))) {
      // Trailing comments before the blank line stay on their line.
      this.commentsBefore(leading?.offset ?? pos.offset, '');
      this.lines.push('');
    }
    this.commentsBefore(pos.offset, '');
    this.lines.push(...text().split('\n'));
  }

  /** A braced body's lines, each literal preceded by the comments before it. */
  block(body: Body): string {
    const start = this.lines.length;
    for (const literal of body) {
      this.commentsBefore(literal.pos.offset, '\t', start);
      this.lines.push(...`\t${printLiteral(literal, '\t')}`.split('\n'));
    }
    return this.lines.splice(start).join('\n');
  }

  text(): string {
    this.commentsBefore(Infinity, '');
    return `${this.lines.join('\n')}\n`;
  }
}

/** The canonical text of the module `source`. Throws CompileError when it does not parse, FormatError when it cannot be formatted faithfully. */
export function formatModule(file: string, source: string): string {
  const module = parseModule(file, source);
  const comments = commentsOf(file, source);
  const writer = new Writer(comments, source);
  writer.statement(module.packagePos, () => printPackage(module.package));
  // A blank line after the package and after the imports, as opa fmt writes them.
  for (const [i, imp] of module.imports.entries()) writer.statement(imp.pos, () => printImport(imp), i === 0);
  // Braces stay as written (`if {` before the first literal), and a body holding a comment gets
  // them so that the comment keeps a line of its own.
  const braced = (body: Body): boolean => {
    const first = body[0]!.pos.offset;
    const last = body.at(-1)!.pos.offset;
    return /\{(\s|#[^\n]*)*$/.test(source.slice(0, first)) || body.length > 1 || comments.some((c) => c.offset > first - 1 && c.offset < last);
  };
  for (const [i, rule] of module.rules.entries()) writer.statement(rule.pos, () => printRule(rule, (body) => writer.block(body), braced), i === 0);
  const formatted = writer.text();

  let reparsed: Module;
  try {
    reparsed = parseModule(file, formatted);
  } catch (err) {
    throw new FormatError(`${file}: formatting would not parse (${(err as Error).message}); left as it is`);
  }
  if (!isDeepStrictEqual(shape(reparsed), shape(module))) throw new FormatError(`${file}: formatting would change the module's meaning; left as it is`);
  if (commentsOf(file, formatted).length !== comments.length) throw new FormatError(`${file}: formatting would lose a comment; left as it is`);
  return formatted;
}
