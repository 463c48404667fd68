/**
 * The expressions and rule heads of parsed modules, found by position: what a traced build's
 * probes (probes.ts) point at, and what coverage counts lines of. Expressions include those in
 * comprehensions, `every` bodies and `with` values, as OPA's `ast.WalkExprs` finds them.
 */
import { childTerms, literalTerms, type Body, type Literal, type Module, type Pos, type Rule, type Term } from './parse/ast.ts';

export interface IndexedExpression {
  literal: Literal;
  /** The rule it is part of: `data.pkg.rule`. */
  rule: string;
  /** Whether it is directly in the rule's body (or an else clause's), not in a closure. */
  topLevel: boolean;
}

export interface IndexedHead {
  pos: Pos;
  rule: string;
}

export interface ModuleIndex {
  module: Module;
  expressions: IndexedExpression[];
  /** Each rule's head, and each else clause's. */
  heads: IndexedHead[];
}

/** `file:offset`, the key positions are found by. */
export function positionKey(file: string, offset: number): string {
  return `${file}:${offset}`;
}

/** Indexes one module (see the module comment). */
export function indexModule(module: Module): ModuleIndex {
  const expressions: IndexedExpression[] = [];
  const heads: IndexedHead[] = [];
  const walkTerm = (term: Term, rule: string): void => {
    if (term.type === 'arraycomp' || term.type === 'setcomp') {
      walkTerm(term.head, rule);
      walkBody(term.body, rule, false);
    } else if (term.type === 'objectcomp') {
      walkTerm(term.key, rule);
      walkTerm(term.value, rule);
      walkBody(term.body, rule, false);
    }
    for (const child of childTerms(term)) walkTerm(child, rule);
  };
  const walkBody = (body: Body, rule: string, topLevel: boolean): void => {
    for (const literal of body) {
      expressions.push({ literal, rule, topLevel });
      for (const term of literalTerms(literal)) walkTerm(term, rule);
      if (literal.expr.type === 'every') walkBody(literal.expr.body, rule, false);
    }
  };
  for (const rule of module.rules) {
    const name = ruleName(module, rule);
    heads.push({ pos: rule.pos, rule: name });
    for (const term of [...(rule.args ?? []), rule.key, ...(rule.subKeys ?? []), rule.value]) if (term) walkTerm(term, name);
    walkBody(rule.body, name, true);
    for (const clause of rule.else) {
      heads.push({ pos: clause.pos, rule: name });
      if (clause.value) walkTerm(clause.value, name);
      walkBody(clause.body, name, true);
    }
  }
  return { module, expressions, heads };
}

/** `data.<package>.<rule path>`. */
export function ruleName(module: Module, rule: Rule): string {
  return ['data', ...module.package, ...rule.path].join('.');
}
