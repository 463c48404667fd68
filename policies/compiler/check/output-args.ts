import type { Literal } from '../parse/ast.ts';
import { BUILTINS } from '../builtins.ts';
import type { NameResolver } from './names.ts';

/**
 * A call written as a literal with one argument more than its function takes passes its result
 * out through that argument, as OPA allows for every builtin and function: `count(xs, n)` is
 * `n = count(xs)`, `f(x, true)` is `true = f(x)`. As a unification, safety ordering and planning
 * treat the output like any other pattern. Other literals are returned as they are.
 */
export function outputArgAsUnification(lit: Literal, resolver: NameResolver, isBound: (name: string) => boolean): Literal {
  const e = lit.expr;
  if (e.type !== 'term' || e.term.type !== 'call') return lit;
  const call = e.term;
  const callee = resolver.callee(call.callee, isBound);
  const arity = 'group' in callee ? callee.group.arity : BUILTINS[callee.builtin]!.arity;
  if (call.args.length !== arity + 1) return lit;
  const output = call.args[call.args.length - 1]!;
  return { ...lit, expr: { type: 'unify', left: output, right: { ...call, args: call.args.slice(0, -1) }, pos: e.pos } };
}
