import type { Module } from '../parse/ast.ts';
import { findNode, type ImportTarget, type Program } from './program.ts';

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
    if (findNode(this.program.root, path)?.group) return { root: 'data', path };
    return undefined;
  }
}

/** Wildcards (`_`) are renamed by the planner to `$_N`; each is its own variable. */
export function isWildcard(name: string): boolean {
  return name.startsWith('$_');
}
