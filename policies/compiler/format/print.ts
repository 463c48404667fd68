/**
 * Rego source from the AST, in the canonical layout of `opa fmt`: tabs for indentation, one
 * blank line between statements, `:=` and `if`, single spaces around operators and after commas,
 * strings double-quoted. Parentheses are written where precedence needs them (the AST does not
 * keep the ones in the source). Comments are not in the AST: `formatModule` places them.
 */
import type { Body, Expr, Import, Literal, Pos, Rule, Term } from '../parse/ast.ts';

/** As in the parser: a higher number binds tighter; membership (`in`) is loosest. */
const PRECEDENCE: Readonly<Record<string, number>> = {
  '==': 1, '!=': 1, '<': 1, '<=': 1, '>': 1, '>=': 1,
  '|': 2,
  '&': 3,
  '+': 4, '-': 4,
  '*': 5, '/': 5, '%': 5,
};
const MEMBER = 0;
const OPERAND = 6;

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
const KEYWORDS: ReadonlySet<string> = new Set([
  'package', 'import', 'default', 'if', 'else', 'contains', 'some', 'every', 'in', 'not', 'with', 'as', 'true', 'false', 'null',
]);

function precedenceOf(term: Term): number {
  if (term.type === 'member') return MEMBER;
  if (term.type === 'binop') return PRECEDENCE[term.op]!;
  return OPERAND;
}

/** `term`, parenthesised when it binds more loosely than `min`. */
function printAt(term: Term, min: number, indent: string): string {
  const text = printTerm(term, indent);
  return precedenceOf(term) < min ? `(${text})` : text;
}

/** A key that can follow a dot. */
function isName(key: string): boolean {
  return IDENT.test(key) && !KEYWORDS.has(key);
}

function selector(key: Term, indent: string): string {
  return key.type === 'string' && isName(key.value) ? `.${key.value}` : `[${printTerm(key, indent)}]`;
}

/** `a.b["c-d"]`: a package or import path. */
function printPath(parts: string[]): string {
  return parts.map((p, i) => (i === 0 ? p : isName(p) ? `.${p}` : `[${JSON.stringify(p)}]`)).join('');
}

/** Written over several lines in the source: kept so, one item per line, as `opa fmt` does. */
function spansLines(start: Pos, items: Array<{ pos: Pos }>): boolean {
  return items.some((item) => item.pos.line > start.line);
}

/** A collection's items between `open` and `close`: on one line, or one per line with a trailing comma. */
function printItems(open: string, close: string, items: string[], multiline: boolean, indent: string): string {
  if (!multiline) return `${open}${items.join(', ')}${close}`;
  return `${open}\n${items.map((item) => `${indent}\t${item},\n`).join('')}${indent}${close}`;
}

/** A comprehension: `[head | body]`, its body on lines of its own when it was written so. */
function printComprehension(open: string, head: string, body: Body, close: string, start: Pos, indent: string): string {
  if (!spansLines(start, body)) return `${open}${head} | ${body.map((l) => printLiteral(l, indent)).join('; ')}${close}`;
  return `${open}${head} |\n${printBody(body, `${indent}\t`)}\n${indent}${close}`;
}

export function printTerm(term: Term, indent = ''): string {
  const print = (t: Term) => printTerm(t, `${indent}\t`);
  switch (term.type) {
    case 'null':
      return 'null';
    case 'boolean':
      return String(term.value);
    case 'number':
      return term.value;
    case 'string':
      return JSON.stringify(term.value);
    case 'var':
      return term.name;
    case 'ref':
      return `${printAt(term.head, OPERAND, indent)}${term.path.map((k) => selector(k, indent)).join('')}`;
    case 'array': {
      const multiline = spansLines(term.pos, term.items);
      return printItems('[', ']', term.items.map((t) => (multiline ? print(t) : printTerm(t, indent))), multiline, indent);
    }
    case 'set': {
      if (term.items.length === 0) return 'set()';
      const multiline = spansLines(term.pos, term.items);
      return printItems('{', '}', term.items.map((t) => (multiline ? print(t) : printTerm(t, indent))), multiline, indent);
    }
    case 'object': {
      const multiline = spansLines(term.pos, term.entries.map(([k]) => k));
      const inner = multiline ? `${indent}\t` : indent;
      return printItems('{', '}', term.entries.map(([k, v]) => `${printTerm(k, inner)}: ${printTerm(v, inner)}`), multiline, indent);
    }
    case 'arraycomp':
      return printComprehension('[', printTerm(term.head, indent), term.body, ']', term.pos, indent);
    case 'setcomp':
      return printComprehension('{', printTerm(term.head, indent), term.body, '}', term.pos, indent);
    case 'objectcomp':
      return printComprehension('{', `${printTerm(term.key, indent)}: ${printTerm(term.value, indent)}`, term.body, '}', term.pos, indent);
    case 'call':
      return `${printAt(term.callee, OPERAND, indent)}(${term.args.map((t) => printTerm(t, indent)).join(', ')})`;
    case 'binop': {
      const p = PRECEDENCE[term.op]!;
      // Left associative: a right operand of the same precedence keeps its parentheses.
      return `${printAt(term.left, p, indent)} ${term.op} ${printAt(term.right, p + 1, indent)}`;
    }
    case 'neg':
      return `-${printAt(term.operand, OPERAND, indent)}`;
    case 'member': {
      const value = term.key ? `${printAt(term.key, 1, indent)}, ${printAt(term.value, 1, indent)}` : printAt(term.value, MEMBER, indent);
      return `${value} in ${printAt(term.collection, 1, indent)}`;
    }
  }
}

function printExpr(expr: Expr, indent: string): string {
  switch (expr.type) {
    case 'term':
      return printTerm(expr.term, indent);
    case 'assign':
      return `${printTerm(expr.left, indent)} := ${printTerm(expr.right, indent)}`;
    case 'unify':
      return `${printTerm(expr.left, indent)} = ${printTerm(expr.right, indent)}`;
    case 'some':
      return `some ${expr.vars.map((v) => v.name).join(', ')}`;
    case 'somein': {
      const vars = expr.key ? `${printAt(expr.key, 1, indent)}, ${printAt(expr.value, 1, indent)}` : printAt(expr.value, 1, indent);
      return `some ${vars} in ${printAt(expr.collection, 1, indent)}`;
    }
    case 'every': {
      const vars = expr.key ? `${printTerm(expr.key)}, ${printTerm(expr.value)}` : printTerm(expr.value);
      return `every ${vars} in ${printAt(expr.domain, 1, indent)} {\n${printBody(expr.body, `${indent}\t`)}\n${indent}}`;
    }
  }
}

/** One body literal at `indent` (the indentation of its line, used by nested `every` bodies). */
export function printLiteral(literal: Literal, indent = ''): string {
  const withs = literal.with.map((w) => ` with ${printTerm(w.target, indent)} as ${printTerm(w.value, indent)}`).join('');
  return `${literal.negated ? 'not ' : ''}${printExpr(literal.expr, indent)}${withs}`;
}

/** A body, one literal per line at `indent`. */
export function printBody(body: Body, indent: string): string {
  return body.map((l) => `${indent}${printLiteral(l, indent)}`).join('\n');
}

function printHead(rule: Rule): string {
  let head = `${rule.default ? 'default ' : ''}${rule.name}`;
  if (rule.args) head += `(${rule.args.map((t) => printTerm(t)).join(', ')})`;
  if (rule.kind === 'partialSet') return `${head} contains ${printTerm(rule.key!)}`;
  if (rule.key) head += selector(rule.key, '');
  return rule.value ? `${head} := ${printTerm(rule.value)}` : head;
}

/** Prints a braced rule body's lines (without the braces). */
export type BlockPrinter = (body: Body) => string;

const plainBlock: BlockPrinter = (body) => printBody(body, '\t');

/** Whether a body is written in braces; by default, when it is more than one plain literal. */
export type BracePolicy = (body: Body) => boolean;

const bracedWhenLong: BracePolicy = (body) => body.length > 1 || body[0]!.expr.type === 'every';

function printIf(body: Body, printBlock: BlockPrinter, braced: BracePolicy): string {
  if (!braced(body) && body.length === 1) return ` if ${printLiteral(body[0]!)}`;
  return ` if {\n${printBlock(body)}\n}`;
}

/** A rule with its else chain; `printBlock` and `braced` let the formatter keep comments and braces. */
export function printRule(rule: Rule, printBlock: BlockPrinter = plainBlock, braced: BracePolicy = bracedWhenLong): string {
  let text = printHead(rule);
  if (rule.body.length > 0) text += printIf(rule.body, printBlock, braced);
  for (const clause of rule.else) {
    text += ` else${clause.value ? ` := ${printTerm(clause.value)}` : ''}`;
    if (clause.body.length > 0) text += printIf(clause.body, printBlock, braced);
  }
  return text;
}

export function printImport(imp: Import): string {
  return `import ${printPath(imp.path)}${imp.alias ? ` as ${imp.alias}` : ''}`;
}

export function printPackage(path: string[]): string {
  return `package ${printPath(path)}`;
}
