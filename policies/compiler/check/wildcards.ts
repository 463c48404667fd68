import { walkModules, type Module } from '../parse/ast.ts';

/**
 * Gives every `_` its own name (`$_0`, `$_1`, …) so that each wildcard is a distinct variable,
 * as in Rego. Mutates the modules in place.
 */
export function renameWildcards(modules: Module[]): void {
  let next = 0;
  walkModules(modules, {
    term(t) {
      if (t.type === 'var' && t.name === '_') t.name = `$_${next++}`;
    },
  });
}
