import type { Module, Pos, Term } from '../parse/ast.ts';
import { BUILTINS } from '../builtins.ts';
import { CompileError } from '../errors.ts';
import { findNode, type ImportTarget, type Program, type RuleGroup } from './program.ts';

/** What a call's callee names: a user function, a builtin, or nothing known (with why). */
export type Callee = { group: RuleGroup } | { builtin: string };

/**
 * Resolves a bare name in one module the way Rego does: `input` and `data` are the roots, a rule
 * of the module's own package and an import alias are globals, anything else is a local variable.
 */
export class NameResolver {
  readonly program: Program;
  readonly module: Module;
  private readonly aliases: Map<string, ImportTarget>;

  constructor(program: Program, module: Module) {
    this.program = program;
    this.module = module;
    this.aliases = program.imports.get(module) ?? new Map();
  }

  /** The global a name refers to, or undefined when it is a local variable. */
  global(name: string): ImportTarget | undefined {
    if (name === 'input') return { root: 'input', path: [] };
    if (name === 'data') return { root: 'data', path: [] };
    const alias = this.aliases.get(name);
    if (alias) return alias;
    const path = [...this.module.package, name];
    const node = findNode(this.program.root, path);
    if (node?.group || node?.named) return { root: 'data', path };
    return undefined;
  }

  /**
   * The function a callee (`f`, `lib.f`, `data.x.f`, `object.get`) names. A name bound as a local
   * variable (`isLocal`) is never a function's. Throws a check error when it names nothing callable.
   */
  callee(callee: Term, isLocal: (name: string) => boolean): Callee {
    const found = this.lookupCallee(callee, isLocal);
    if ('error' in found) this.fail(found.error, found.pos);
    return found;
  }

  /** `callee` without throwing: what the term names, or why it names no function. */
  lookupCallee(callee: Term, isLocal: (name: string) => boolean): Callee | { error: string; pos: Pos } {
    let head = callee;
    const keys: string[] = [];
    if (callee.type === 'ref') {
      head = callee.head;
      for (const key of callee.path) {
        if (key.type !== 'string') return { error: 'function names must be constant paths', pos: key.pos };
        keys.push(key.value);
      }
    }
    if (head.type !== 'var') return { error: 'function names must be constant paths', pos: callee.pos };
    const g = isLocal(head.name) ? undefined : this.global(head.name);
    if (g && g.root === 'data') {
      const node = findNode(this.program.root, [...g.path, ...keys]);
      if (node?.group?.kind === 'function') return { group: node.group };
      if (node?.group) return { error: `data.${node.group.path.join('.')} is a rule, not a function`, pos: callee.pos };
      return { error: `undefined function data.${[...g.path, ...keys].join('.')}`, pos: callee.pos };
    }
    const name = [head.name, ...keys].join('.');
    if (BUILTINS[name]) return { builtin: name };
    return { error: `undefined function ${name}`, pos: callee.pos };
  }

  private fail(message: string, pos: Pos): never {
    throw new CompileError('check', message, pos, this.module.source);
  }
}

/** Wildcards (`_`) are renamed by the planner to `$_N`; each is its own variable. */
export function isWildcard(name: string): boolean {
  return name.startsWith('$_');
}
