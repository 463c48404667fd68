import { childTerms, literalTerms, type Body, type Literal, type Pos, type Term } from '../parse/ast.ts';
import { CompileError } from '../errors.ts';
import { isWildcard } from './names.ts';

/**
 * Safety analysis: which variables a literal needs bound before it runs, and which it binds.
 * Bodies are reordered (as OPA does) so that every literal runs after the literals binding the
 * variables it needs; a variable nothing can bind is an unsafe-variable error.
 */

/** Decides whether a bare name is a local variable (as opposed to a rule, import or root). */
export type IsLocal = (name: string) => boolean;

interface Usage {
  inputs: Map<string, Pos>;
  outputs: Map<string, Pos>;
}

function note(map: Map<string, Pos>, name: string, pos: Pos): void {
  if (!map.has(name)) map.set(name, pos);
}

/** Every local variable a term mentions outside comprehensions (closures have their own scope). */
export function topLevelVars(term: Term, isLocal: IsLocal, into: Map<string, Pos>): void {
  if (term.type === 'var') {
    if (isLocal(term.name)) note(into, term.name, term.pos);
    return;
  }
  for (const child of childTerms(term)) topLevelVars(child, isLocal, into);
}

/** Local variables a literal mentions outside closures. */
export function literalVars(lit: Literal, isLocal: IsLocal): Map<string, Pos> {
  const into = new Map<string, Pos>();
  const e = lit.expr;
  switch (e.type) {
    case 'term':
      topLevelVars(e.term, isLocal, into);
      break;
    case 'assign':
    case 'unify':
      topLevelVars(e.left, isLocal, into);
      topLevelVars(e.right, isLocal, into);
      break;
    case 'some':
      break;
    case 'somein':
      if (e.key) topLevelVars(e.key, isLocal, into);
      topLevelVars(e.value, isLocal, into);
      topLevelVars(e.collection, isLocal, into);
      break;
    case 'every':
      topLevelVars(e.domain, isLocal, into);
      break;
  }
  for (const w of lit.with) if (!w.replacement) topLevelVars(w.value, isLocal, into);
  return into;
}

/** Free variables of a closure body that come from outside it. */
function closureInputs(body: Body, own: Term[], isLocal: IsLocal, outer: Set<string>, usage: Usage): void {
  const ownNames = new Set<string>();
  for (const t of own) {
    const m = new Map<string, Pos>();
    topLevelVars(t, isLocal, m);
    for (const name of m.keys()) ownNames.add(name);
  }
  const visit = (t: Term): void => {
    const m = new Map<string, Pos>();
    topLevelVars(t, isLocal, m);
    for (const [name, pos] of m) if (outer.has(name) && !ownNames.has(name)) note(usage.inputs, name, pos);
    forEachClosure(t, (inner, innerOwn) => closureInputs(inner, innerOwn, isLocal, outer, usage));
  };
  for (const lit of body) {
    literalTerms(lit).forEach(visit);
    if (lit.expr.type === 'every') closureInputs(lit.expr.body, [], isLocal, outer, usage);
  }
}

/** Calls `fn` with each comprehension directly inside a term (not nested ones). */
function forEachClosure(term: Term, fn: (body: Body, own: Term[]) => void): void {
  if (term.type === 'arraycomp' || term.type === 'setcomp') fn(term.body, [term.head]);
  else if (term.type === 'objectcomp') fn(term.body, [term.key, term.value]);
  else for (const child of childTerms(term)) forEachClosure(child, fn);
}

/** Vars in value positions are inputs; unbound vars used as ref keys are outputs. */
function walkValue(term: Term, isLocal: IsLocal, usage: Usage): void {
  if (term.type === 'var') {
    if (isLocal(term.name)) note(usage.inputs, term.name, term.pos);
  } else if (term.type === 'ref') {
    walkValue(term.head, isLocal, usage);
    for (const key of term.path) {
      if (key.type === 'var' && isLocal(key.name)) note(usage.outputs, key.name, key.pos);
      else walkValue(key, isLocal, usage);
    }
  } else {
    for (const child of childTerms(term)) walkValue(child, isLocal, usage);
  }
}

/** Vars in pattern positions (bare, or inside array/object literals) may be bound by unification. */
function walkPattern(term: Term, isLocal: IsLocal, usage: Usage): void {
  switch (term.type) {
    case 'var':
      if (isLocal(term.name)) note(usage.outputs, term.name, term.pos);
      return;
    case 'array':
      term.items.forEach((i) => walkPattern(i, isLocal, usage));
      return;
    case 'object':
      term.entries.forEach(([k, v]) => {
        walkValue(k, isLocal, usage);
        walkPattern(v, isLocal, usage);
      });
      return;
    default:
      walkValue(term, isLocal, usage);
  }
}

/**
 * What a literal needs and binds, given the variables visible from outside it (`outer`: bound
 * variables and those other literals or the rule head mention).
 */
function analyse(lit: Literal, isLocal: IsLocal, outer: Set<string>): Usage {
  const usage: Usage = { inputs: new Map(), outputs: new Map() };
  const e = lit.expr;
  switch (e.type) {
    case 'term':
      walkValue(e.term, isLocal, usage);
      break;
    case 'assign':
      walkPattern(e.left, isLocal, usage);
      walkValue(e.right, isLocal, usage);
      break;
    case 'unify':
      walkPattern(e.left, isLocal, usage);
      walkPattern(e.right, isLocal, usage);
      break;
    case 'some':
      break;
    case 'somein':
      if (e.key) walkPattern(e.key, isLocal, usage);
      walkPattern(e.value, isLocal, usage);
      walkValue(e.collection, isLocal, usage);
      break;
    case 'every': {
      walkValue(e.domain, isLocal, usage);
      const own = e.key ? [e.key, e.value] : [e.value];
      closureInputs(e.body, own, isLocal, outer, usage);
      break;
    }
  }
  for (const w of lit.with) if (!w.replacement) walkValue(w.value, isLocal, usage);
  const closureOuter = new Set([...outer, ...literalVars(lit, isLocal).keys()]);
  literalTerms(lit).forEach((t) => forEachClosure(t, (body, own) => closureInputs(body, own, isLocal, closureOuter, usage)));
  for (const name of usage.outputs.keys()) usage.inputs.delete(name);
  return usage;
}

function unsafe(name: string, pos: Pos, source: string): CompileError {
  return new CompileError('check', `var ${name} is unsafe`, pos, source);
}

/**
 * Orders a body so every literal's inputs are bound before it runs. `bound` holds the variables
 * bound on entry (function arguments, enclosing scopes); `headVars` those the rule head mentions.
 * Returns the reordered body and the set of variables bound after it.
 */
export function orderBody(
  body: Body,
  bound: ReadonlySet<string>,
  headVars: ReadonlySet<string>,
  isLocal: IsLocal,
  source: string,
): { body: Body; bound: Set<string> } {
  const vars = body.map((lit) => literalVars(lit, isLocal));
  const outerOf = (i: number, known: Set<string>): Set<string> => {
    const outer = new Set<string>([...known, ...headVars]);
    vars.forEach((m, j) => {
      if (j !== i) for (const name of m.keys()) outer.add(name);
    });
    return outer;
  };
  const known = new Set(bound);
  const remaining = body.map((lit, i) => ({ lit, i }));
  const ordered: Body = [];
  while (remaining.length > 0) {
    let picked = -1;
    let firstMissing: [string, Pos] | undefined;
    for (let r = 0; r < remaining.length; r++) {
      const { lit, i } = remaining[r]!;
      const outer = outerOf(i, known);
      if (lit.negated) {
        for (const [name, pos] of vars[i]!) {
          if (!outer.has(name) && !isWildcard(name)) throw unsafe(name, pos, source);
        }
      }
      const usage = analyse(lit, isLocal, outer);
      const needs = [...usage.inputs].filter(([name]) => !known.has(name));
      const negatedNeeds = lit.negated
        ? [...usage.outputs].filter(([name]) => !known.has(name) && outer.has(name))
        : [];
      const missing = [...needs, ...negatedNeeds];
      if (missing.length === 0) {
        picked = r;
        if (!lit.negated) for (const name of usage.outputs.keys()) known.add(name);
        break;
      }
      firstMissing ??= missing[0];
    }
    if (picked < 0) {
      const [name, pos] = firstMissing!;
      throw unsafe(name, pos, source);
    }
    ordered.push(remaining[picked]!.lit);
    remaining.splice(picked, 1);
  }
  return { body: ordered, bound: known };
}
