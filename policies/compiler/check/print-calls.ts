import { walkModules, type Module, type Pos, type Term } from '../parse/ast.ts';

/** The builtin a `print(…)` statement becomes: it takes one array holding each argument's set of values. */
export const INTERNAL_PRINT = 'internal.print';

/**
 * Rewrites every `print(a, b, …)` statement into `internal.print([{$p0 | $p0 := a}, {$p1 | $p1 :=
 * b}, …])`, as OPA's compiler does: each argument becomes the set of its values, so an argument
 * that is undefined is an empty set (printed `<undefined>`) instead of making the statement
 * undefined, and printing never changes what a rule decides. Mutates the modules in place.
 */
export function rewritePrintCalls(modules: Module[]): void {
  let next = 0;
  walkModules(modules, {
    literal(lit) {
      const e = lit.expr;
      if (e.type !== 'term' || e.term.type !== 'call') return;
      const { callee, args, pos } = e.term;
      if (callee.type !== 'var' || callee.name !== 'print') return;
      const sets: Term[] = args.map((arg) => {
        const v: Term = { type: 'var', name: `$print${next++}`, pos: arg.pos };
        return { type: 'setcomp', head: v, body: [{ negated: false, expr: { type: 'assign', left: v, right: arg, pos: arg.pos }, with: [], pos: arg.pos }], pos: arg.pos };
      });
      e.term = { type: 'call', callee: internalPrint(callee.pos), args: [{ type: 'array', items: sets, pos }], pos };
    },
  });
}

function internalPrint(pos: Pos): Term {
  return { type: 'ref', head: { type: 'var', name: 'internal', pos }, path: [{ type: 'string', value: 'print', pos }], pos };
}
