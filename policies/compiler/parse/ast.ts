/**
 * The Rego abstract syntax tree produced by the parser and consumed by the checker and planner.
 *
 * Only Rego v1 syntax is represented (rule bodies introduced by `if`, partial sets by `contains`).
 * Every node carries the position of its first character so later stages can report
 * `file:line:col` errors against the source.
 */

export interface Pos {
  file: string;
  /** 1-based line. */
  line: number;
  /** 1-based column, counted in UTF-16 code units of the line. */
  col: number;
  /** 0-based offset into the source text. */
  offset: number;
}

/** Infix and prefix operators that appear inside terms. `in` is membership (`x in xs`). */
export type Operator =
  | '+' | '-' | '*' | '/' | '%'
  | '&' | '|'
  | '==' | '!=' | '<' | '<=' | '>' | '>=';

export type Term =
  | { type: 'null'; pos: Pos }
  | { type: 'boolean'; value: boolean; pos: Pos }
  /** `value` is the literal's source text (e.g. "1e3", "12345678901234567890") so no precision is lost. */
  | { type: 'number'; value: string; pos: Pos }
  | { type: 'string'; value: string; pos: Pos }
  /** A variable. Each `_` is kept as the name `_`; the checker makes every occurrence unique. */
  | { type: 'var'; name: string; pos: Pos }
  /**
   * A reference: `input.a[x].b`, `data.pkg.rule`, `xs[_]`, `f(x).y`.
   * `path` holds one term per selector: `.b` becomes a string term, `[x]` the term x.
   */
  | { type: 'ref'; head: Term; path: Term[]; pos: Pos }
  | { type: 'array'; items: Term[]; pos: Pos }
  | { type: 'object'; entries: Array<[Term, Term]>; pos: Pos }
  | { type: 'set'; items: Term[]; pos: Pos }
  | { type: 'arraycomp'; head: Term; body: Body; pos: Pos }
  | { type: 'setcomp'; head: Term; body: Body; pos: Pos }
  | { type: 'objectcomp'; key: Term; value: Term; body: Body; pos: Pos }
  /** A call: `count(x)`, `object.get(o, k, d)`, `data.lib.f(x)`, `lib.f(x)`. `callee` is a var or a ref of string keys. */
  | { type: 'call'; callee: Term; args: Term[]; pos: Pos }
  /** Binary operator application. */
  | { type: 'binop'; op: Operator; left: Term; right: Term; pos: Pos }
  /** Unary minus applied to a non-literal (`-x`); `-1` is parsed as the number literal "-1". */
  | { type: 'neg'; operand: Term; pos: Pos }
  /** Membership `value in collection` or `key, value in collection`; evaluates to true or false. */
  | { type: 'member'; key?: Term; value: Term; collection: Term; pos: Pos };

export type Expr =
  /** A term used as a condition: succeeds when defined and not `false`. */
  | { type: 'term'; term: Term; pos: Pos }
  /** `left := right` (declares the variables in `left`). */
  | { type: 'assign'; left: Term; right: Term; pos: Pos }
  /** `left = right` (unification, either side may hold unbound variables). */
  | { type: 'unify'; left: Term; right: Term; pos: Pos }
  /** `some x, y` (declares local variables). */
  | { type: 'some'; vars: Array<{ name: string; pos: Pos }>; pos: Pos }
  /** `some v in coll` / `some k, v in coll`; key and value may be vars or patterns. */
  | { type: 'somein'; key?: Term; value: Term; collection: Term; pos: Pos }
  /** `every v in domain { body }` / `every k, v in domain { body }`. */
  | { type: 'every'; key?: Term; value: Term; domain: Term; body: Body; pos: Pos };

export interface With {
  /** `input`, `input.a.b`, `data.x.y`, a rule, a function or a builtin (a ref or a var). */
  target: Term;
  value: Term;
  /**
   * Set by the planner when the target is a function and the value names the function replacing
   * it (`with count as mock_count`): the value is then a name, not a variable.
   */
  replacement?: boolean;
  pos: Pos;
}

export interface Literal {
  negated: boolean;
  expr: Expr;
  with: With[];
  pos: Pos;
}

export type Body = Literal[];

export interface ElseClause {
  /** `else := v` (absent means `true`). */
  value?: Term;
  /** Empty body means unconditionally true (`else := 3`). */
  body: Body;
  pos: Pos;
}

export interface Rule {
  /**
   * complete: `p := v if {…}`, `p if {…}`, `p := v`, `default p := v` (with `default: true`).
   * partialSet: `p contains x if {…}`.
   * partialObject: `p[k] := v if {…}`.
   * partialObjectOfSets: `p[k] contains x if {…}` (each key holds the set of its elements).
   * function: `f(a, b) := v if {…}`, `f(x) if {…}`.
   * A head may be a ref (`a.b.c := 1`, `a.b[k] := v`, `a.b.f(x) := y`, `a[k].b[j] := v`): its
   * string keys up to the first other key lead to the rule, a partial object whose values the
   * keys from there on (`key`, then `subKeys`) nest into.
   */
  kind: 'complete' | 'partialSet' | 'partialObject' | 'partialObjectOfSets' | 'function';
  /** The first name of the head (`a` of `a.b.c := 1`): the name the package's rules know it by. */
  name: string;
  /** The string keys of the head, from the name on: `["a", "b", "c"]`. */
  path: string[];
  default: boolean;
  /** Function parameters (vars or patterns such as `[a, b]`). */
  args?: Term[];
  /** Element of a partial set, or key of a partial object (of sets). */
  key?: Term;
  /** Keys after a partial object's key in a general ref head (`r` and `s` of `p[k].r[s] := v`). */
  subKeys?: Term[];
  /** Value of a complete rule, function or partial object, or element of a partial object of sets. Absent means `true`. */
  value?: Term;
  /** Empty body means unconditionally true. */
  body: Body;
  else: ElseClause[];
  pos: Pos;
}

export interface Import {
  /** The imported ref as written: `data.lib.util`, `input.user`, `rego.v1`, `future.keywords.in`. */
  path: string[];
  alias?: string;
  pos: Pos;
}

export interface Module {
  file: string;
  source: string;
  /** Package path without the `data` prefix: `package a.b` → ["a", "b"]. */
  package: string[];
  packagePos: Pos;
  imports: Import[];
  rules: Rule[];
}

/**
 * The terms directly inside a term, outside any comprehension body (a comprehension's head and
 * body are its own scope; walkers that need them handle comprehensions themselves).
 */
export function childTerms(term: Term): Term[] {
  switch (term.type) {
    case 'ref':
      return [term.head, ...term.path];
    case 'array':
    case 'set':
      return term.items;
    case 'object':
      return term.entries.flat();
    case 'call':
      return term.args;
    case 'binop':
      return [term.left, term.right];
    case 'neg':
      return [term.operand];
    case 'member':
      return term.key ? [term.key, term.value, term.collection] : [term.value, term.collection];
    default:
      return [];
  }
}

/** The terms of a literal outside any closure: its expression's and its `with` values. */
export function literalTerms(lit: Literal): Term[] {
  const e = lit.expr;
  const terms: Term[] = [];
  switch (e.type) {
    case 'term':
      terms.push(e.term);
      break;
    case 'assign':
    case 'unify':
      terms.push(e.left, e.right);
      break;
    case 'somein':
      if (e.key) terms.push(e.key);
      terms.push(e.value, e.collection);
      break;
    case 'every':
      terms.push(e.domain);
      break;
    case 'some':
      break;
  }
  for (const w of lit.with) if (!w.replacement) terms.push(w.value);
  return terms;
}


/** What `walkModules` calls: each literal before its parts, each term before the terms inside it. */
export interface AstVisitor {
  literal?(lit: Literal): void;
  term?(term: Term): void;
}

/**
 * Visits every literal and term of `modules`, comprehension and `every` bodies included, in
 * source order: a rule's arguments, keys, value, body and else clauses; a literal's expression,
 * then its `with` values. A visitor may rewrite what it is given; the walk goes on into the
 * rewritten node.
 */
export function walkModules(modules: Module[], visitor: AstVisitor): void {
  const term = (t: Term | undefined): void => {
    if (!t) return;
    visitor.term?.(t);
    if (t.type === 'arraycomp' || t.type === 'setcomp') {
      term(t.head);
      body(t.body);
    } else if (t.type === 'objectcomp') {
      term(t.key);
      term(t.value);
      body(t.body);
    } else {
      childTerms(t).forEach(term);
    }
  };
  const literal = (lit: Literal): void => {
    visitor.literal?.(lit);
    const e = lit.expr;
    switch (e.type) {
      case 'term':
        term(e.term);
        break;
      case 'assign':
      case 'unify':
        term(e.left);
        term(e.right);
        break;
      case 'some':
        break;
      case 'somein':
        term(e.key);
        term(e.value);
        term(e.collection);
        break;
      case 'every':
        term(e.key);
        term(e.value);
        term(e.domain);
        body(e.body);
        break;
    }
    for (const w of lit.with) term(w.value);
  };
  const body = (b: Body): void => b.forEach(literal);
  for (const module of modules) {
    for (const rule of module.rules) {
      rule.args?.forEach(term);
      term(rule.key);
      rule.subKeys?.forEach(term);
      term(rule.value);
      body(rule.body);
      for (const e of rule.else) {
        term(e.value);
        body(e.body);
      }
    }
  }
}
