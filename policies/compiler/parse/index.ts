/**
 * The parse stage: Rego v1 source text → `Module` AST. Throws a `CompileError` (stage `parse`)
 * positioned at the first offending token.
 */
import type { Module } from './ast.ts';
import { Parser } from './parser.ts';

export type * from './ast.ts';

export function parseModule(file: string, source: string): Module {
  return new Parser(file, source).parseModule();
}
