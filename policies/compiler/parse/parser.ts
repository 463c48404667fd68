/**
 * A recursive-descent parser for Rego v1 modules, producing the AST in `ast.ts`.
 *
 * The grammar and operator precedence follow OPA's own parser (v1/ast/parser.go), including its
 * treatment of line breaks: they are insignificant inside an expression (so a trailing or leading
 * binary operator, or an open bracket, carries an expression onto the next line) and only matter
 * between body literals, which must be separated by a newline or `;`. Refs and calls, however,
 * must be written without a space before `.`, `[` or `(`: `f (x)` is not a call.
 *
 * The first error ends parsing. Two spots read ahead and rewind, as OPA's parser does: a
 * comprehension body that stops at a comma (`{"u": a | b, "v": c}` is a union, not a
 * comprehension), and `k, v in xs` at the top of a literal. Collections are cached by offset so
 * a rewind never parses one twice, which keeps nested rewinds linear.
 */
import { CompileError } from '../errors.ts';
import type { Body, ElseClause, Expr, Import, Literal, Module, Operator, Pos, Rule, Term, With } from './ast.ts';
import { Lexer, type LexerMark, type Token } from './lexer.ts';

/**
 * Binding strength of the binary operators, as in OPA (parseTermRelation → parseTermOr →
 * parseTermAnd → parseTermArith → parseTermFactor). `in` is looser still and handled apart.
 */
const BINARY_PRECEDENCE: ReadonlyMap<string, number> = new Map([
  ['==', 1], ['!=', 1], ['<', 1], ['<=', 1], ['>', 1], ['>=', 1],
  ['|', 2],
  ['&', 3],
  ['+', 4], ['-', 4],
  ['*', 5], ['/', 5], ['%', 5],
]);

const IMPORT_ROOTS: ReadonlySet<string> = new Set(['data', 'input', 'future', 'rego']);

/**
 * Nesting limit for terms and bodies. Each level costs several stack frames; the limit keeps a
 * pathological file a parse error instead of a stack overflow, and is far above what policies use.
 */
const MAX_NESTING = 200;

type Closer = ')' | ']' | '}';

/** A parser position to rewind to. */
interface Cursor {
  lexer: LexerMark;
  tok: Token;
  prev: Token;
}

interface RuleHead {
  path: string[];
  args?: Term[];
  key?: Term;
  subKeys: Term[];
}

export class Parser {
  private readonly file: string;
  private readonly source: string;
  private readonly lexer: Lexer;
  private tok: Token;
  /** The most recently consumed token, for errors positioned at the end of a line. */
  private prev: Token;
  private depth = 0;
  private readonly collections = new Map<number, { term: Term; after: Cursor }>();

  constructor(file: string, source: string) {
    this.file = file;
    this.source = source;
    this.lexer = new Lexer(file, source);
    this.tok = this.lexer.next();
    this.prev = this.tok;
  }

  parseModule(): Module {
    const packageTok = this.tok;
    if (!this.atKeyword('package')) {
      this.fail(`expected 'package' at the start of the module, found ${describe(packageTok)}`, packageTok.pos);
    }
    this.advance();
    const pkg = this.dottedPath('package path');
    this.endStatement('package declaration');

    const imports: Import[] = [];
    const rules: Rule[] = [];
    while (this.tok.kind !== 'eof') {
      if (this.atKeyword('import')) {
        imports.push(this.importDecl());
        this.endStatement('import');
      } else if (this.atKeyword('package')) {
        this.fail(`expected a rule or an import, found a second 'package' declaration (a module has exactly one)`, this.tok.pos);
      } else {
        rules.push(this.rule());
        this.endStatement('rule');
      }
    }
    return { file: this.file, source: this.source, package: pkg, packagePos: packageTok.pos, imports, rules };
  }

  // ---- statements -------------------------------------------------------------------------

  /** Statements share no line: anything after one on the same line is a mistake worth naming. */
  private endStatement(what: string): void {
    if (this.tok.kind === 'eof' || this.tok.newlineBefore) return;
    this.fail(`expected a newline after the ${what}, found ${describe(this.tok)}`, this.tok.pos);
  }

  /** `a.b["c-d"].e`: names and string keys only, as package and import paths allow. */
  private dottedPath(what: string): string[] {
    const first = this.tok;
    if (first.kind !== 'ident') this.fail(`expected a ${what}, found ${describe(first)}`, first.pos);
    this.advance();
    const parts = [first.text];
    while (!this.tok.spaceBefore) {
      if (this.atPunct('.')) {
        parts.push(this.dotName().value);
      } else if (this.atPunct('[')) {
        const open = this.tok;
        this.advance();
        const key = this.tok;
        if (key.kind !== 'string') this.fail(`expected a string key in the ${what}, found ${describe(key)}`, key.pos);
        this.advance();
        this.expectClose(']', open, "'['");
        parts.push(key.value);
      } else {
        break;
      }
    }
    return parts;
  }

  private importDecl(): Import {
    const importTok = this.tok;
    this.advance();
    const rootTok = this.tok;
    const path = this.dottedPath('import path');
    if (!IMPORT_ROOTS.has(path[0]!)) {
      this.fail(`expected an import path starting with data, input, future or rego, found '${path[0]}'`, rootTok.pos);
    }
    const imp: Import = { path, pos: importTok.pos };
    if (this.atKeyword('as')) {
      this.advance();
      const alias = this.tok;
      if (alias.kind !== 'ident') this.fail(`expected an alias name after 'as', found ${describe(alias)}`, alias.pos);
      this.advance();
      imp.alias = alias.text;
    }
    return imp;
  }

  private rule(): Rule {
    const start = this.tok;
    const isDefault = this.atKeyword('default');
    if (isDefault) this.advance();
    const nameTok = this.tok;
    const head = this.ruleHead();
    const label = this.textSince(nameTok);

    let kind: Rule['kind'] = head.args ? 'function' : head.key ? 'partialObject' : 'complete';
    let key = head.key;
    let value: Term | undefined;
    if (this.atKeyword('contains')) {
      if (head.args) this.fail(`expected ':=', '=' or 'if' after the function head '${label}', found 'contains'`, this.tok.pos);
      if (isDefault) this.fail(`expected ':=' after 'default ${label}', found 'contains' (default rules are complete)`, this.tok.pos);
      this.advance();
      if (head.key) {
        kind = 'partialObjectOfSets';
        value = this.expr();
      } else {
        kind = 'partialSet';
        key = this.expr();
      }
    } else if (this.atPunct(':=') || this.atPunct('=')) {
      this.advance();
      value = this.expr();
    }

    const rule: Rule = {
      kind,
      name: head.path[0]!,
      path: head.path,
      default: isDefault,
      ...(head.args && { args: head.args }),
      ...(key && { key }),
      ...(head.subKeys.length > 0 && { subKeys: head.subKeys }),
      ...(value && { value }),
      body: [],
      else: [],
      pos: start.pos,
    };

    if (isDefault) {
      this.checkDefault(rule, label);
      return rule;
    }

    if (this.atKeyword('if')) {
      rule.body = this.ifBody();
    } else if (this.atPunct('{')) {
      this.missingIf(label);
    } else if (!value && kind !== 'partialSet') {
      const { found, pos } = this.foundOnLine();
      const options = kind === 'complete' ? "':=', '=', 'if' or 'contains'" : "':=', '=' or 'if'";
      this.fail(`expected ${options} after the rule head '${label}', found ${found}`, pos);
    }

    if (this.atKeyword('else')) {
      if (kind !== 'complete' && kind !== 'function') {
        this.fail(`expected a newline after the rule, found 'else' ('else' applies to complete rules and functions only)`, this.tok.pos);
      }
      if (rule.body.length === 0) {
        this.fail(`expected 'if' and a body before 'else' (an 'else' follows a conditional rule)`, this.tok.pos);
      }
      rule.else = this.elseChain(label);
    }
    return rule;
  }

  /**
   * `p`, `p.q.r`, `p[k]`, `p.q[k]`, `p[k].r[j]`, `f(args)` or `p.q.f(args)`. String keys extend
   * the rule's path up to the first other key, which makes a partial object; the keys after it
   * nest into its values.
   */
  private ruleHead(): RuleHead {
    const nameTok = this.tok;
    if (nameTok.kind !== 'ident') this.fail(`expected a rule name, found ${describe(nameTok)}`, nameTok.pos);
    this.advance();
    const head: RuleHead = { path: [nameTok.text], subKeys: [] };
    // OPA allows space between a rule name and its arguments or key (`f (x)`, `p [k]`).
    while (this.atPunct('.') || this.atPunct('[')) {
      const key = this.selector();
      if (head.key) head.subKeys.push(key);
      else if (key.type === 'string') head.path.push(key.value);
      else head.key = key;
    }
    if (this.atPunct('(')) {
      if (head.key) {
        this.fail(`expected ':=', '=' or 'if' after the rule head, found '(' (a function's name is a path of names, without '[…]')`, this.tok.pos);
      }
      const open = this.tok;
      this.advance();
      head.args = this.termList(')', open, 'argument list');
    }
    return head;
  }

  private checkDefault(rule: Rule, label: string): void {
    if (rule.kind === 'partialObject') {
      this.fail(`expected a complete rule or function after 'default', found the partial rule '${label}'`, rule.key!.pos);
    }
    if (!rule.value) {
      const { found, pos } = this.foundOnLine();
      this.fail(`expected ':=' and a value after 'default ${label}', found ${found}`, pos);
    }
    if (this.atKeyword('if') || this.atPunct('{')) {
      this.fail(`expected a newline after the default rule, found ${describe(this.tok)} (default rules have no body)`, this.tok.pos);
    }
    const seen = new Set<string>();
    for (const arg of rule.args ?? []) {
      if (arg.type !== 'var') this.fail(`expected a variable as argument of default function '${rule.path.join('.')}', found ${termKind(arg)}`, arg.pos);
      if (arg.name !== '_' && seen.has(arg.name)) {
        this.fail(`expected distinct arguments for default function '${rule.path.join('.')}', found '${arg.name}' twice`, arg.pos);
      }
      seen.add(arg.name);
    }
    const nonConstant = firstNonConstant(rule.value);
    if (nonConstant) {
      this.fail(`expected a constant value for default rule '${rule.path.join('.')}', found ${termKind(nonConstant)}`, nonConstant.pos);
    }
  }

  private elseChain(label: string): ElseClause[] {
    const clauses: ElseClause[] = [];
    while (this.atKeyword('else')) {
      const last = clauses[clauses.length - 1];
      if (last && last.body.length === 0) {
        this.fail(`expected a newline after the unconditional 'else', found 'else' (it must come last)`, this.tok.pos);
      }
      const elseTok = this.tok;
      this.advance();
      const clause: ElseClause = { body: [], pos: elseTok.pos };
      if (this.atPunct(':=') || this.atPunct('=')) {
        this.advance();
        clause.value = this.expr();
      } else if (!this.atKeyword('if') && !this.atPunct('{')) {
        const { found, pos } = this.foundOnLine();
        this.fail(`expected ':=', '=' or 'if' after 'else', found ${found}`, pos);
      }
      if (this.atKeyword('if')) clause.body = this.ifBody();
      else if (this.atPunct('{')) this.missingIf(`${label} … else`);
      clauses.push(clause);
    }
    return clauses;
  }

  /** After `if`: a braced body, or a single literal. */
  private ifBody(): Body {
    this.advance();
    if (this.atPunct('{')) {
      const open = this.tok;
      this.advance();
      return this.block('}', open, 'rule body');
    }
    if (this.tok.kind === 'eof') this.fail(`expected a rule body after 'if', found end of file`, this.tok.pos);
    return [this.literal()];
  }

  private missingIf(label: string): never {
    this.fail(`expected 'if' before the rule body, found '{' (Rego v1 requires it: '${label} if { … }')`, this.tok.pos);
  }

  // ---- bodies -----------------------------------------------------------------------------

  /** Literals up to `closer`, which is consumed; `open` has already been consumed. */
  private block(closer: Closer, open: Token, what: string): Body {
    this.enter(open);
    if (this.atPunct(closer)) this.fail(`expected a literal in the ${what}, found '${closer}' (bodies cannot be empty)`, this.tok.pos);
    const body: Body = [];
    const assigned = new Set<string>();
    for (;;) {
      const lit = this.literal();
      if (lit.expr.type === 'assign') this.noteAssigned(lit.expr.left, assigned);
      body.push(lit);
      if (this.atPunct(';')) {
        this.advance();
        continue;
      }
      if (this.atPunct(closer)) {
        this.advance();
        this.depth--;
        return body;
      }
      if (this.tok.kind === 'eof') {
        this.fail(`expected '${closer}' to close the ${what} opened at ${at(open)}, found end of file`, this.tok.pos);
      }
      if (!this.tok.newlineBefore) {
        this.fail(`expected ';', a newline or '${closer}' after the literal, found ${describe(this.tok)}`, this.tok.pos);
      }
    }
  }

  /** `:=` declares its variables: as in OPA, declaring one twice in a body is an error, not a comparison. */
  private noteAssigned(pattern: Term, assigned: Set<string>): void {
    if (pattern.type === 'var') {
      if (pattern.name === '_') return;
      if (assigned.has(pattern.name)) this.fail(`var ${pattern.name} assigned above`, pattern.pos);
      assigned.add(pattern.name);
    } else if (pattern.type === 'array') {
      for (const item of pattern.items) this.noteAssigned(item, assigned);
    } else if (pattern.type === 'object') {
      for (const [, value] of pattern.entries) this.noteAssigned(value, assigned);
    }
  }

  private literal(): Literal {
    const start = this.tok;
    let negated = false;
    if (this.atKeyword('not')) {
      negated = true;
      this.advance();
      if (this.atKeyword('some') || this.atKeyword('every')) {
        this.fail(`expected an expression after 'not', found '${this.tok.text}' (it cannot be negated)`, this.tok.pos);
      }
    }
    let expr: Expr;
    if (this.atKeyword('some')) expr = this.some();
    else if (this.atKeyword('every')) expr = this.every();
    else expr = this.exprLiteral();
    const withs = expr.type === 'some' ? [] : this.withClauses();
    return { negated, expr, with: withs, pos: start.pos };
  }

  private exprLiteral(): Expr {
    const left = this.expr(true);
    if (this.atPunct(':=')) {
      this.advance();
      return { type: 'assign', left, right: this.expr(true), pos: left.pos };
    }
    if (this.atPunct('=')) {
      this.advance();
      return { type: 'unify', left, right: this.expr(true), pos: left.pos };
    }
    return { type: 'term', term: left, pos: left.pos };
  }

  /** `some x, y` declares; `some v in xs` / `some k, v in xs` iterates. */
  private some(): Expr {
    const someTok = this.tok;
    this.advance();
    const terms = [this.binary()];
    while (this.atPunct(',')) {
      this.advance();
      terms.push(this.binary());
    }
    if (this.atKeyword('in')) {
      if (terms.length > 2) {
        this.fail(`expected 'in' after at most a key and a value ('some k, v in xs'), found a third term`, terms[2]!.pos);
      }
      this.advance();
      const collection = this.binary();
      const [first, second] = terms as [Term, Term | undefined];
      return second
        ? { type: 'somein', key: first, value: second, collection, pos: someTok.pos }
        : { type: 'somein', value: first, collection, pos: someTok.pos };
    }
    const vars = terms.map((t) => {
      if (t.type !== 'var') this.fail(`expected a variable name after 'some', found ${termKind(t)}`, t.pos);
      return { name: t.name, pos: t.pos };
    });
    return { type: 'some', vars, pos: someTok.pos };
  }

  /** `every v in xs { … }` / `every k, v in xs { … }`; key and value are plain variables, as in OPA. */
  private every(): Expr {
    const everyTok = this.tok;
    this.advance();
    let key: Term | undefined;
    let value = this.binary();
    if (this.atPunct(',')) {
      this.advance();
      key = value;
      value = this.binary();
    }
    if (!this.atKeyword('in')) this.fail(`expected 'in' after ${quote(this.textSince(everyTok))}, found ${describe(this.tok)}`, this.tok.pos);
    this.advance();
    const domain = this.binary();
    if (key && key.type !== 'var') this.fail(`expected a variable as the key in 'every', found ${termKind(key)}`, key.pos);
    if (value.type !== 'var') this.fail(`expected a variable as the value in 'every', found ${termKind(value)}`, value.pos);
    if (!this.atPunct('{')) this.fail(`expected '{' to start the body of 'every', found ${describe(this.tok)}`, this.tok.pos);
    const open = this.tok;
    this.advance();
    const body = this.block('}', open, "'every' body");
    return key
      ? { type: 'every', key, value, domain, body, pos: everyTok.pos }
      : { type: 'every', value, domain, body, pos: everyTok.pos };
  }

  private withClauses(): With[] {
    const withs: With[] = [];
    while (this.atKeyword('with')) {
      const withTok = this.tok;
      this.advance();
      const target = this.operand();
      if (target.type !== 'var' && target.type !== 'ref') {
        this.fail(`expected a 'with' target such as input.x or data.x, found ${termKind(target)}`, target.pos);
      }
      if (!this.atKeyword('as')) this.fail(`expected 'as' after the 'with' target, found ${describe(this.tok)}`, this.tok.pos);
      this.advance();
      withs.push({ target, value: this.expr(), pos: withTok.pos });
    }
    return withs;
  }

  // ---- terms ------------------------------------------------------------------------------

  /**
   * A full expression: membership `x in xs`, the loosest operator (left associative), over the
   * binary operators. With `keyValue`, `k, v in xs` is accepted too, as OPA does where a comma
   * cannot mean anything else (the sides of a literal); a comma not followed by `v in xs` is
   * left to the caller. With `stopAtBar`, a top-level `|` ends the expression.
   */
  private expr(keyValue = false, stopAtBar = false): Term {
    let left = this.binary(1, stopAtBar);
    if (keyValue && this.atPunct(',')) {
      const key = left;
      const member = this.attempt((): Term | undefined => {
        this.advance();
        const value = this.binary(1, stopAtBar);
        if (!this.atKeyword('in')) return undefined;
        this.advance();
        return { type: 'member', key, value, collection: this.binary(1, stopAtBar), pos: key.pos };
      });
      if (member) left = member;
    }
    while (this.atKeyword('in')) {
      this.advance();
      left = { type: 'member', value: left, collection: this.binary(1, stopAtBar), pos: left.pos };
    }
    return left;
  }

  /** Left-associative binary operators binding at least as tightly as `minPrecedence` (precedence climbing). */
  private binary(minPrecedence = 1, stopAtBar = false): Term {
    let left = this.operand();
    for (;;) {
      const tok = this.tok;
      const precedence = tok.kind === 'punct' ? BINARY_PRECEDENCE.get(tok.text) : undefined;
      if (precedence === undefined || precedence < minPrecedence || (stopAtBar && tok.text === '|')) return left;
      this.advance();
      const right = this.binary(precedence + 1, stopAtBar);
      left = { type: 'binop', op: tok.text as Operator, left, right, pos: left.pos };
    }
  }

  /** A primary term with its selectors and calls: `x`, `a.b[c]`, `f(x).y`, `[1, 2]`, `-x`. */
  private operand(): Term {
    this.enter(this.tok);
    const term = this.postfix(this.primary());
    this.depth--;
    return term;
  }

  private primary(): Term {
    const tok = this.tok;
    const pos = tok.pos;
    switch (tok.kind) {
      case 'number':
        this.advance();
        return this.number(tok.text, pos);
      case 'string':
        this.advance();
        return { type: 'string', value: tok.value, pos };
      case 'ident':
        this.advance();
        return { type: 'var', name: tok.text, pos };
      case 'keyword':
        if (tok.text === 'null') {
          this.advance();
          return { type: 'null', pos };
        }
        if (tok.text === 'true' || tok.text === 'false') {
          this.advance();
          return { type: 'boolean', value: tok.text === 'true', pos };
        }
        // Only rule heads give `contains` a meaning; elsewhere it names the builtin.
        if (tok.text === 'contains') {
          this.advance();
          return { type: 'var', name: tok.text, pos };
        }
        break;
      case 'punct':
        if (tok.text === '-') return this.negative();
        if (tok.text === '[' || tok.text === '{') return this.collection();
        if (tok.text === '(') return this.parenthesized();
        break;
    }
    return this.fail(`expected a term, found ${describe(tok)}`, pos);
  }

  /**
   * A number literal, kept as written. The runtime holds integers of any size exactly, but a
   * fraction or an exponent makes a float, and a float beyond ±1.8e308 has no value there: OPA
   * would keep the text, this compiler refuses it rather than build a module that cannot load.
   */
  private number(text: string, pos: Pos): Term {
    if (/[.eE]/.test(text) && !Number.isFinite(Number(text))) {
      this.fail(`number ${text} is beyond the float range (±1.8e308)`, pos);
    }
    return { type: 'number', value: text, pos };
  }

  /** `-1` directly on a number is a literal (source text kept); anything else negates. */
  private negative(): Term {
    const minus = this.tok;
    this.advance();
    const num = this.tok;
    if (num.kind === 'number' && !num.spaceBefore) {
      this.advance();
      return this.number(`-${num.text}`, minus.pos);
    }
    return { type: 'neg', operand: this.operand(), pos: minus.pos };
  }

  /** The term keeps the position of `(` so every node still starts where its text does. */
  private parenthesized(): Term {
    const open = this.tok;
    this.advance();
    const inner = this.expr(true);
    this.expectClose(')', open, "'('");
    return { ...inner, pos: open.pos };
  }

  private postfix(start: Term): Term {
    let term = start;
    while (this.tok.kind === 'punct' && !this.tok.spaceBefore) {
      const tok = this.tok;
      if (tok.text !== '.' && tok.text !== '[' && tok.text !== '(') break;
      if (isScalar(term)) {
        this.fail(`expected an operator after ${termKind(term)}, found '${tok.text}' (literals cannot be indexed or called)`, tok.pos);
      }
      if (tok.text === '(') {
        term = this.call(term);
      } else if (term.type === 'ref') {
        term.path.push(this.selector());
      } else {
        term = { type: 'ref', head: term, path: [this.selector()], pos: term.pos };
      }
    }
    return term;
  }

  /** `.name` (keywords allowed, as in `future.keywords.in`) or `[term]`. */
  private selector(): Term {
    if (this.atPunct('.')) return this.dotName();
    const open = this.tok;
    this.advance();
    const key = this.expr();
    this.expectClose(']', open, "'['");
    return key;
  }

  private dotName(): Term & { type: 'string' } {
    const dot = this.tok;
    this.advance();
    const name = this.tok;
    if (name.spaceBefore) this.fail(`expected a name directly after '.', found whitespace`, dot.end);
    if (name.kind !== 'ident' && name.kind !== 'keyword') this.fail(`expected a name after '.', found ${describe(name)}`, name.pos);
    this.advance();
    return { type: 'string', value: name.text, pos: name.pos };
  }

  private call(callee: Term): Term {
    const open = this.tok;
    if (!isCallable(callee)) {
      this.fail(`expected a function name such as f or lib.f before '(', found ${termKind(callee)}`, open.pos);
    }
    this.advance();
    const args = this.termList(')', open, 'argument list');
    if (callee.type === 'var' && callee.name === 'set' && args.length === 0) {
      return { type: 'set', items: [], pos: callee.pos };
    }
    return { type: 'call', callee, args, pos: callee.pos };
  }

  /**
   * An array, set or object, cached by offset: a rewind (see `firstElement`) re-reads the
   * enclosing element without parsing the collections inside it again, which keeps nested
   * rewinds linear.
   */
  private collection(): Term {
    const offset = this.tok.pos.offset;
    const cached = this.collections.get(offset);
    if (cached) {
      this.seek(cached.after);
      return cached.term;
    }
    const term = this.atPunct('[') ? this.array() : this.braced();
    this.collections.set(offset, { term, after: this.cursor() });
    return term;
  }

  /** `[]`, `[a, b]` or `[head | body]`. */
  private array(): Term {
    const open = this.tok;
    this.advance();
    if (this.atPunct(']')) {
      this.advance();
      return { type: 'array', items: [], pos: open.pos };
    }
    const { head, body } = this.firstElement(']', open, 'array comprehension');
    if (body) return { type: 'arraycomp', head, body, pos: open.pos };
    return { type: 'array', items: this.listTail([head], ']', open, 'array'), pos: open.pos };
  }

  /** `{}` (empty object), sets, objects and their comprehensions; the first element decides. */
  private braced(): Term {
    const open = this.tok;
    this.advance();
    if (this.atPunct('}')) {
      this.advance();
      return { type: 'object', entries: [], pos: open.pos };
    }
    const { head, body } = this.firstElement('}', open, 'set comprehension');
    if (body) return { type: 'setcomp', head, body, pos: open.pos };
    if (this.atPunct(':')) return this.objectRest(head, open);
    if (!this.atPunct(',') && !this.atPunct('}')) {
      this.fail(`expected ':', ',' or '}' in the object or set opened at ${at(open)}, found ${describe(this.tok)}`, this.tok.pos);
    }
    return { type: 'set', items: this.listTail([head], '}', open, 'set'), pos: open.pos };
  }

  /** After the first key of an object: `: v, …}` or `: v | body}`. */
  private objectRest(key: Term, open: Token): Term {
    this.advance();
    const { head: value, body } = this.firstElement('}', open, 'object comprehension');
    if (body) return { type: 'objectcomp', key, value, body, pos: open.pos };
    const entries: Array<[Term, Term]> = [[key, value]];
    for (;;) {
      if (this.closeList('}', open, 'object')) return { type: 'object', entries, pos: open.pos };
      const k = this.expr();
      if (!this.atPunct(':')) this.fail(`expected ':' after the object key, found ${describe(this.tok)}`, this.tok.pos);
      this.advance();
      entries.push([k, this.expr()]);
    }
  }

  /**
   * The first element of an array or set, or the first value of an object, with the body that
   * follows when a top-level `|` makes it a comprehension. Comprehensions take precedence over
   * set union, as in OPA, except when the body stops at a comma: then the `|` was union after
   * all (`{"u": a | b, "v": c}`) and the element is read again as an expression. Unlike OPA, the
   * head may be any expression (`[x * 2 | some x in xs]`), not only a single term: OPA refuses
   * that form only through a known parser limitation (open-policy-agent/opa#4215).
   */
  private firstElement(closer: Closer, open: Token, what: string): { head: Term; body?: Body } {
    const start = this.cursor();
    const depth = this.depth;
    const head = this.expr(false, true);
    if (!this.atPunct('|')) return { head };
    this.advance();
    try {
      return { head, body: this.block(closer, open, what) };
    } catch (e) {
      if (!(e instanceof CompileError) || !this.atPunct(',')) throw e;
    }
    this.seek(start);
    this.depth = depth;
    return { head: this.expr() };
  }

  /** Comma-separated terms up to `closer` (consumed); `open` has already been consumed. */
  private termList(closer: Closer, open: Token, what: string): Term[] {
    if (this.atPunct(closer)) {
      this.advance();
      return [];
    }
    return this.listTail([this.expr()], closer, open, what);
  }

  private listTail(items: Term[], closer: Closer, open: Token, what: string): Term[] {
    while (!this.closeList(closer, open, what)) items.push(this.expr());
    return items;
  }

  /**
   * After a list element: consumes `closer` (true), or a `,` with a trailing `closer` (true),
   * or a `,` before another element (false).
   */
  private closeList(closer: Closer, open: Token, what: string): boolean {
    if (this.atPunct(closer)) {
      this.advance();
      return true;
    }
    if (!this.atPunct(',')) {
      this.fail(`expected ',' or '${closer}' to close the ${what} opened at ${at(open)}, found ${describe(this.tok)}`, this.tok.pos);
    }
    this.advance();
    if (this.atPunct(closer)) {
      this.advance();
      return true;
    }
    return false;
  }

  // ---- helpers ----------------------------------------------------------------------------

  private cursor(): Cursor {
    return { lexer: this.lexer.mark(), tok: this.tok, prev: this.prev };
  }

  private seek(cursor: Cursor): void {
    this.lexer.reset(cursor.lexer);
    this.tok = cursor.tok;
    this.prev = cursor.prev;
  }

  /** Runs `parse`; when it fails or declines (returns undefined), rewinds as if it never ran. */
  private attempt<T>(parse: () => T | undefined): T | undefined {
    const start = this.cursor();
    const depth = this.depth;
    try {
      const result = parse();
      if (result !== undefined) return result;
    } catch (e) {
      if (!(e instanceof CompileError)) throw e;
    }
    this.seek(start);
    this.depth = depth;
    return undefined;
  }

  private advance(): void {
    this.prev = this.tok;
    this.tok = this.lexer.next();
  }

  private atKeyword(word: string): boolean {
    return this.tok.kind === 'keyword' && this.tok.text === word;
  }

  private atPunct(text: string): boolean {
    return this.tok.kind === 'punct' && this.tok.text === text;
  }

  private expectClose(closer: Closer, open: Token, what: string): void {
    if (!this.atPunct(closer)) {
      this.fail(`expected '${closer}' to close the ${what} opened at ${at(open)}, found ${describe(this.tok)}`, this.tok.pos);
    }
    this.advance();
  }

  private enter(tok: Token): void {
    if (++this.depth > MAX_NESTING) this.fail(`expected at most ${MAX_NESTING} levels of nesting, found more`, tok.pos);
  }

  /** The source from `start` to the end of the last consumed token, for messages. */
  private textSince(start: Token): string {
    return this.source.slice(start.pos.offset, this.prev.end.offset);
  }

  /**
   * Describes what follows on the current line. A token on a later line is reported as the end
   * of the line, positioned there, since the mistake is what is missing before the break.
   */
  private foundOnLine(): { found: string; pos: Pos } {
    if (this.tok.kind === 'eof') return { found: 'end of file', pos: this.tok.pos };
    if (this.tok.newlineBefore) return { found: 'end of line', pos: this.prev.end };
    return { found: describe(this.tok), pos: this.tok.pos };
  }

  private fail(message: string, pos: Pos): never {
    throw new CompileError('parse', message, pos, this.source);
  }
}

function at(tok: Token): string {
  return `${tok.pos.line}:${tok.pos.col}`;
}

function describe(tok: Token): string {
  return tok.kind === 'eof' ? 'end of file' : quote(tok.text);
}

/** Source text quoted for a message: its first line, shortened when long. */
function quote(text: string): string {
  const firstLine = text.split('\n', 1)[0]!;
  return `'${firstLine.length > 30 ? `${firstLine.slice(0, 30)}…` : firstLine}'`;
}

function termKind(t: Term): string {
  switch (t.type) {
    case 'null': return 'null';
    case 'boolean': return 'a boolean';
    case 'number': return 'a number';
    case 'string': return 'a string';
    case 'var': return `the variable '${t.name}'`;
    case 'ref': return 'a reference';
    case 'array': return 'an array';
    case 'object': return 'an object';
    case 'set': return 'a set';
    case 'arraycomp':
    case 'setcomp':
    case 'objectcomp': return 'a comprehension';
    case 'call': return 'a call';
    case 'binop':
    case 'neg':
    case 'member': return 'an expression';
  }
}

function isScalar(t: Term): boolean {
  return t.type === 'null' || t.type === 'boolean' || t.type === 'number' || t.type === 'string';
}

/** A callee is a name or a ref of names: `f`, `object.get`, `data.lib.f`, `lib["f"]`. */
function isCallable(t: Term): boolean {
  if (t.type === 'var') return true;
  return t.type === 'ref' && t.head.type === 'var' && t.path.every((k) => k.type === 'string');
}

/**
 * Default values are evaluated without a body, so, as in OPA, they may not depend on anything
 * outside a comprehension (a comprehension is a closure with a body of its own).
 */
function firstNonConstant(t: Term | undefined): Term | undefined {
  if (!t) return undefined;
  switch (t.type) {
    case 'null':
    case 'boolean':
    case 'number':
    case 'string':
    case 'arraycomp':
    case 'setcomp':
    case 'objectcomp':
      return undefined;
    case 'array':
    case 'set':
      return firstOf(t.items);
    case 'object':
      return firstOf(t.entries.flat());
    default:
      return t;
  }
}

function firstOf(terms: Term[]): Term | undefined {
  for (const t of terms) {
    const bad = firstNonConstant(t);
    if (bad) return bad;
  }
  return undefined;
}
