import binaryen from 'binaryen';
import { CompileError } from '../errors.ts';
import type { Block, Local, Operand, Stmt } from '../plan/ir.ts';
import { RUNTIME_FUNCTIONS, type RuntimeFunction } from './runtime-abi.ts';
import { invariantDots } from './invariant-dots.ts';
import { readLocals } from './read-locals.ts';
import { i32 } from './runtime-module.ts';

type Expr = binaryen.ExpressionRef;

/** How a `Call` statement reaches its function. */
export interface CallTarget {
  /**
   * Leading arguments passed as they are even when undefined: a planned function's input and
   * data (there is no input when the caller gave none, and the rule must still run).
   */
  unguardedArgs: number;
  call(args: Expr[]): Expr;
}

/** What statement translation needs from the module being linked. */
export interface EmitContext {
  readonly module: binaryen.Module;
  runtime(name: RuntimeFunction): string;
  constant(index: number): Expr;
  /** A string constant holding `text`. */
  string(text: string): Expr;
  callTarget(func: string, argCount: number): CallTarget;
  /** Spends one step of the evaluation's iteration budget (iteration-budget.ts). */
  spendIteration(): Expr;
  /** Stops the evaluation with `message` (the host's `opa_abort`). */
  abort(message: string): Expr;
}

/** The Wasm function shape an IR Func or Plan is translated into. */
export interface FunctionShape {
  /** Where the IR code came from, for error messages. */
  origin: string;
  /** Number of IR locals. */
  locals: number;
  /** IR locals received as the first Wasm parameters, in order. */
  params: readonly Local[];
  /** Wasm parameters after those (the plan's result set). */
  extraParams: number;
  blocks: readonly Block[];
  /** IR locals read after the blocks ran (the function's result). */
  readAfter: readonly Local[];
}

/**
 * Translates the blocks of one IR function or plan into Wasm. Every IR block becomes a Wasm
 * `block` with its own label, so a failing statement is a `br` to the innermost label and
 * `Break{index}` a `br` to the label `index` levels up. IR local i lives in Wasm local
 * `wasmLocal(i)`; temporaries (scan counters, cache flags) are appended after them.
 * A Dot, Len or Call whose result is undefined leaves its target undefined and fails, as the
 * code `opa build -t wasm` emits does.
 */
export class FunctionBody {
  private readonly m: binaryen.Module;
  private readonly wasmIndex: number[];
  private readonly used: ReadonlySet<Local>;
  private readonly invariant: ReadonlySet<Stmt>;
  /** Per invariant (source, key) pair: the Wasm locals of its value and of its "looked up" flag. */
  private readonly lookups = new Map<string, { value: number; done: number }>();
  /** Wasm locals beyond the parameters: the IR locals that are not parameters, then temporaries. */
  private varCount: number;
  private readonly paramCount: number;
  private readonly labels: string[] = [];
  private labelCount = 0;

  constructor(
    private readonly ctx: EmitContext,
    private readonly shape: FunctionShape,
  ) {
    this.m = ctx.module;
    this.paramCount = shape.params.length + shape.extraParams;
    this.wasmIndex = new Array<number>(shape.locals).fill(-1);
    shape.params.forEach((local, i) => {
      this.checkLocal(local);
      this.wasmIndex[local] = i;
    });
    let next = this.paramCount;
    for (let local = 0; local < shape.locals; local++) {
      if (this.wasmIndex[local] === -1) this.wasmIndex[local] = next++;
    }
    this.varCount = next - this.paramCount;
    this.used = readLocals(shape.blocks, shape.readAfter);
    this.invariant = invariantDots(shape.blocks, shape.params);
  }

  /** The Wasm index of an IR local. */
  wasmLocal(local: Local): number {
    this.checkLocal(local);
    return this.wasmIndex[local]!;
  }

  /** A new i32 Wasm local for generated bookkeeping. */
  temporary(): number {
    return this.paramCount + this.varCount++;
  }

  /** Types of the Wasm locals that are not parameters (call after translating). */
  vars(): binaryen.Type[] {
    return new Array<binaryen.Type>(this.varCount).fill(i32);
  }

  /** The translated top-level blocks, run one after the other. */
  body(): Expr[] {
    return this.shape.blocks.map((block) => this.block(block));
  }

  private block(block: Block, completion?: Expr): Expr {
    const label = `b${this.labelCount++}`;
    this.labels.push(label);
    const stmts = block.stmts.flatMap((stmt) => this.stmt(stmt));
    this.labels.pop();
    if (completion !== undefined) stmts.push(completion);
    return this.m.block(label, stmts, binaryen.none);
  }

  private stmt(stmt: Stmt): Expr[] {
    const m = this.m;
    switch (stmt.op) {
      case 'Block':
        return stmt.blocks.map((block) => this.block(block));
      case 'Break': {
        const label = this.labels[this.labels.length - 1 - stmt.index];
        if (label === undefined || stmt.index < 0) {
          throw this.error(`Break ${stmt.index} leaves more blocks than enclose it (${this.labels.length})`);
        }
        return [m.br(label)];
      }
      case 'Assign':
        return [...this.guard(stmt.source), this.set(stmt.target, this.operand(stmt.source))];
      case 'AssignOnce': {
        const target = this.get(stmt.target);
        const conflict = m.if(
          m.i32.eqz(this.rt('rt_equal', [target, this.operand(stmt.source)])),
          this.ctx.abort(stmt.message),
        );
        return [
          ...this.guard(stmt.source),
          m.if(m.i32.eqz(this.get(stmt.target)), this.set(stmt.target, this.operand(stmt.source)), conflict),
        ];
      }
      case 'ResetLocal':
        return [this.set(stmt.target, m.i32.const(0))];
      case 'Dot': {
        const value = this.invariant.has(stmt) ? this.invariantLookup(stmt) : this.lookup(stmt);
        return [...this.guard(stmt.source, stmt.key), this.set(stmt.target, value), this.failIf(m.i32.eqz(this.get(stmt.target)))];
      }
      case 'Len':
        return [
          ...this.guard(stmt.source),
          this.set(stmt.target, this.rt('rt_len', [this.operand(stmt.source)])),
          this.failIf(m.i32.eqz(this.get(stmt.target))),
        ];
      case 'Scan':
        return [...this.guard({ local: stmt.source }), this.scan(stmt)];
      case 'Not':
        // Completing the block means the negated expression held: the Not statement fails.
        return [this.block(stmt.block, m.br(this.failLabel()))];
      case 'Call': {
        const target = this.ctx.callTarget(stmt.func, stmt.args.length);
        return [
          ...this.guard(...stmt.args.slice(target.unguardedArgs)),
          this.set(stmt.target, target.call(stmt.args.map((arg) => this.operand(arg)))),
          this.failIf(m.i32.eqz(this.get(stmt.target))),
        ];
      }
      case 'Equal':
        return [...this.guard(stmt.a, stmt.b), this.failIf(m.i32.eqz(this.equal(stmt.a, stmt.b)))];
      case 'NotEqual':
        return [...this.guard(stmt.a, stmt.b), this.failIf(this.equal(stmt.a, stmt.b))];
      case 'IsDefined':
        return [this.failIf(m.i32.eqz(this.get(stmt.source)))];
      case 'IsUndefined':
        return [this.failIf(this.get(stmt.source))];
      case 'IsArray':
        return this.kindCheck('rt_is_array', stmt.source);
      case 'IsObject':
        return this.kindCheck('rt_is_object', stmt.source);
      case 'IsSet':
        return this.kindCheck('rt_is_set', stmt.source);
      case 'MakeArray':
        return [this.set(stmt.target, this.rt('rt_make_array', [m.i32.const(stmt.capacity)]))];
      case 'MakeObject':
        return [this.set(stmt.target, this.rt('rt_make_object', []))];
      case 'MakeSet':
        return [this.set(stmt.target, this.rt('rt_make_set', []))];
      case 'ArrayAppend':
        return this.mutate('rt_array_append', [{ local: stmt.array }, stmt.value]);
      case 'ObjectInsert':
        return this.mutate('rt_object_insert', [{ local: stmt.object }, stmt.key, stmt.value]);
      case 'ObjectInsertOnce': {
        const args = [{ local: stmt.object }, stmt.key, stmt.value];
        const inserted = this.rt('rt_object_insert_once', args.map((arg) => this.operand(arg)));
        return [...this.guard(...args), m.if(m.i32.eqz(inserted), this.ctx.abort(stmt.message))];
      }
      case 'SetAdd':
        return this.mutate('rt_set_add', [{ local: stmt.set }, stmt.value]);
      case 'ResultSetAdd': {
        if (this.shape.extraParams === 0) throw this.error('ResultSetAdd outside a plan');
        const resultSet = m.local.get(this.shape.params.length, i32);
        return [
          ...this.guard({ local: stmt.value }),
          this.rt('rt_result_set_add', [resultSet, this.get(stmt.value)]),
        ];
      }
      default:
        throw this.error(`unknown statement ${JSON.stringify(stmt satisfies never)}`);
    }
  }

  /**
   * for (i = 0; i < count; i++) { key, value = element i; block }. The count is taken once: the
   * IR never changes a collection while scanning it. Key and value are fetched only when some
   * statement reads them, which saves allocating index numbers for `xs[_]`.
   */
  private scan(stmt: Extract<Stmt, { op: 'Scan' }>): Expr {
    const m = this.m;
    const count = this.temporary();
    const index = this.temporary();
    const exit = `b${this.labelCount++}`;
    const next = `b${this.labelCount++}`;
    const source = (): Expr => this.get(stmt.source);
    const i = (): Expr => m.local.get(index, i32);
    const element: Expr[] = [];
    if (this.used.has(stmt.key)) element.push(this.set(stmt.key, this.rt('rt_iter_key', [source(), i()])));
    if (this.used.has(stmt.value)) element.push(this.set(stmt.value, this.rt('rt_iter_value', [source(), i()])));
    return m.block(exit, [
      m.local.set(count, this.rt('rt_iter_count', [source()])),
      m.local.set(index, m.i32.const(0)),
      m.loop(
        next,
        m.block(null, [
          m.br(exit, m.i32.ge_u(i(), m.local.get(count, i32))),
          this.ctx.spendIteration(),
          ...element,
          this.block(stmt.block),
          m.local.set(index, m.i32.add(i(), m.i32.const(1))),
          m.br(next),
        ]),
      ),
    ]);
  }

  private lookup(stmt: Extract<Stmt, { op: 'Dot' }>): Expr {
    return this.rt('rt_dot', [this.operand(stmt.source), this.operand(stmt.key)]);
  }

  /** The lookup done on the first execution of any Dot of the same pair, then reused. */
  private invariantLookup(stmt: Extract<Stmt, { op: 'Dot' }>): Expr {
    const m = this.m;
    const pair = JSON.stringify([stmt.source, stmt.key]);
    let locals = this.lookups.get(pair);
    if (locals === undefined) {
      locals = { value: this.temporary(), done: this.temporary() };
      this.lookups.set(pair, locals);
    }
    const { value, done } = locals;
    return m.block(
      null,
      [
        m.if(
          m.i32.eqz(m.local.get(done, i32)),
          m.block(null, [m.local.set(value, this.lookup(stmt)), m.local.set(done, m.i32.const(1))]),
        ),
        m.local.get(value, i32),
      ],
      i32,
    );
  }

  private kindCheck(name: RuntimeFunction, source: Operand): Expr[] {
    return [...this.guard(source), this.failIf(this.m.i32.eqz(this.rt(name, [this.operand(source)])))];
  }

  private mutate(name: RuntimeFunction, args: Operand[]): Expr[] {
    return [...this.guard(...args), this.rt(name, args.map((arg) => this.operand(arg)))];
  }

  private equal(a: Operand, b: Operand): Expr {
    return this.rt('rt_equal', [this.operand(a), this.operand(b)]);
  }

  /** Fails the statement when any of the operands is an undefined local. */
  private guard(...operands: Operand[]): Expr[] {
    const locals = new Set<Local>();
    for (const operand of operands) if ('local' in operand) locals.add(operand.local);
    return [...locals].map((local) => this.failIf(this.m.i32.eqz(this.get(local))));
  }

  private failIf(condition: Expr): Expr {
    return this.m.br(this.failLabel(), condition);
  }

  private failLabel(): string {
    const label = this.labels[this.labels.length - 1];
    if (label === undefined) throw this.error('statement outside any block');
    return label;
  }

  private operand(operand: Operand): Expr {
    return 'local' in operand ? this.get(operand.local) : this.ctx.constant(operand.const);
  }

  private get(local: Local): Expr {
    return this.m.local.get(this.wasmLocal(local), i32);
  }

  private set(local: Local, value: Expr): Expr {
    return this.m.local.set(this.wasmLocal(local), value);
  }

  private rt(name: RuntimeFunction, args: Expr[]): Expr {
    const type = RUNTIME_FUNCTIONS[name][1] ? i32 : binaryen.none;
    return this.m.call(this.ctx.runtime(name), args, type);
  }

  private checkLocal(local: Local): void {
    if (!Number.isInteger(local) || local < 0 || local >= this.shape.locals) {
      throw this.error(`local ${local} is outside 0…${this.shape.locals - 1}`);
    }
  }

  private error(message: string): CompileError {
    return new CompileError('emit', `${this.shape.origin}: ${message}`);
  }
}
