/**
 * The Rego → OPA-ABI WebAssembly compiler: parse → check → plan → emit.
 */
import { hostBuiltinsUsed } from './plan/host-builtins-used.ts';
import type { Module } from './parse/ast.ts';
import type { Policy } from './plan/ir.ts';
import { CompileError, CompileErrors } from './errors.ts';
import { parseModule } from './parse/index.ts';
import { rewritePrintCalls } from './check/print-calls.ts';
import { renameWildcards } from './check/wildcards.ts';
import { checkProgram } from './check/program.ts';
import { planProgram } from './plan/planner.ts';
import { printPolicy } from './plan/print.ts';
import { ensureRuntime } from '../runtime/build.ts';
import type { Probe } from './probes.ts';

export interface SourceFile {
  path: string;
  text: string;
}

export interface CompileOptions {
  /**
   * Entrypoints as slash paths below `data`: `pkg/sub/rule` for a rule, `pkg/sub` for the whole
   * package document. The first is entrypoint 0 (what `evaluate(input)` uses by default).
   */
  entrypoints: string[];
  /** A traced build, for tests: the module reports what it evaluates (see probes.ts). */
  probes?: boolean;
}

export interface CompiledModule {
  /** An OPA-ABI Wasm module loadable with `loadPolicy` from `@open-policy-agent/opa-wasm`. */
  wasm: Uint8Array;
  entrypoints: string[];
  /** The plan (IR) printed for debugging. */
  ir: string;
  /** A traced build's probes, by id. */
  probes?: Probe[];
  /** The builtins it calls that run in JavaScript beside it (OPA names). */
  hostBuiltins: string[];
}

/** Parses every file; throws `CompileErrors` with every parse error of every file. */
function parseAll(files: SourceFile[]): Module[] {
  const modules: Module[] = [];
  const errors: CompileError[] = [];
  for (const file of files) {
    try {
      modules.push(parseModule(file.path, file.text));
    } catch (err) {
      if (err instanceof CompileError) errors.push(err);
      else throw err;
    }
  }
  if (errors.length > 0) throw new CompileErrors(errors);
  return modules;
}

/** The rewrites that come before checking: distinct wildcards, `print` statements as OPA compiles them. */
function rewrite(modules: Module[]): void {
  renameWildcards(modules);
  rewritePrintCalls(modules);
}

/**
 * Finds what `opa check` finds, without emitting: every rule is planned because safety is
 * checked there. Throws `CompileErrors`.
 */
export function checkModules(files: SourceFile[]): void {
  const modules = parseAll(files);
  try {
    rewrite(modules);
    planProgram(checkProgram(modules), []);
  } catch (err) {
    if (err instanceof CompileError) throw new CompileErrors([err]);
    throw err;
  }
}

/**
 * Compiles Rego modules into one OPA-ABI Wasm module with the given entrypoints.
 * Throws `CompileErrors` (every parse error of every file, or the first check/plan error).
 */
export async function compileModules(files: SourceFile[], options: CompileOptions): Promise<CompiledModule> {
  const modules = parseAll(files);
  let policy: Policy;
  const probes: Probe[] | undefined = options.probes ? [] : undefined;
  try {
    rewrite(modules);
    policy = planProgram(checkProgram(modules), options.entrypoints, probes);
  } catch (err) {
    if (err instanceof CompileError) throw new CompileErrors([err]);
    throw err;
  }
  // Imported here, not above: emitting loads binaryen (0.7 s), which checking never needs.
  const { emitModule } = await import('./emit/wasm.ts');
  const wasm = emitModule(policy, await ensureRuntime());
  return { wasm, entrypoints: options.entrypoints, ir: printPolicy(policy), hostBuiltins: hostBuiltinsUsed(policy), ...(probes ? { probes } : {}) };
}
