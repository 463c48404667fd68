/**
 * Gathering the compile errors of a whole build or test run so they are reported together.
 */
import { CompileError, CompileErrors } from './errors.ts';

/** The compile errors carried by `err`, or undefined when it is some other failure. */
export function compileErrorsOf(err: unknown): CompileError[] | undefined {
  if (err instanceof CompileErrors) return err.errors;
  if (err instanceof CompileError) return [err];
  return undefined;
}

/** Collects compile errors, dropping repeats (a library's error shows once, not once per policy). */
export class ErrorCollector {
  private readonly seen = new Map<string, CompileError>();

  /** Records the compile errors of `err`; rethrows anything that is not a compile error. */
  add(err: unknown): void {
    const errors = compileErrorsOf(err);
    if (!errors) throw err;
    for (const e of errors) if (!this.seen.has(e.format())) this.seen.set(e.format(), e);
  }

  /** Throws CompileErrors with everything recorded, if anything was. */
  throwIfAny(): void {
    if (this.seen.size > 0) throw new CompileErrors([...this.seen.values()]);
  }
}
