import { childTerms, type Body, type Literal, type Module, type Term } from '../parse/ast.ts';

/**
 * Gives every `_` its own name (`$_0`, `$_1`, …) so that each wildcard is a distinct variable,
 * as in Rego. Mutates the modules in place.
 */
export function renameWildcards(modules: Module[]): void {
  let next = 0;
  const term = (t: Term | undefined): void => {
    if (!t) return;
    if (t.type === 'var') {
      if (t.name === '_') t.name = `$_${next++}`;
    } else if (t.type === 'arraycomp' || t.type === 'setcomp') {
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
