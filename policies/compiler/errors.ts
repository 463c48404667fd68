import type { Pos } from './parse/ast.ts';

/** Which compiler stage refused the source. */
export type ErrorStage = 'parse' | 'check' | 'plan' | 'emit';

/**
 * A compile error tied to a source position. `format()` renders it the way a person fixes it:
 * `file:line:col: stage error: message`, the offending line, and a caret under the column.
 */
export class CompileError extends Error {
  readonly stage: ErrorStage;
  readonly pos: Pos | undefined;
  readonly source: string | undefined;

  constructor(stage: ErrorStage, message: string, pos?: Pos, source?: string) {
    super(message);
    this.name = 'CompileError';
    this.stage = stage;
    this.pos = pos;
    this.source = source;
  }

  /** `file:line:col` or the empty string when the error has no position. */
  get location(): string {
    return this.pos ? `${this.pos.file}:${this.pos.line}:${this.pos.col}` : '';
  }

  format(): string {
    const head = `${this.location ? this.location + ': ' : ''}${this.stage} error: ${this.message}`;
    if (!this.pos || this.source === undefined) return head;
    const line = this.source.split(/\r?\n/)[this.pos.line - 1] ?? '';
    const caret = ' '.repeat(Math.max(0, this.pos.col - 1)) + '^';
    return `${head}\n  ${line}\n  ${caret}`;
  }
}

/** Several compile errors from one build, reported together. */
export class CompileErrors extends Error {
  readonly errors: CompileError[];

  constructor(errors: CompileError[]) {
    super(errors.map((e) => e.format()).join('\n'));
    this.name = 'CompileErrors';
    this.errors = errors;
  }
}
