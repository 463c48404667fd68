import binaryen from 'binaryen';
import { i32, type RuntimeModule } from './runtime-module.ts';

type Expr = binaryen.ExpressionRef;

/**
 * Per-evaluation caches of rules without arguments. A rule's value is the same every time it is
 * called with the evaluation's own input and data, so the first such call stores it (undefined
 * included) and later calls return it. Calls under `with` pass other documents and bypass the
 * cache; `gen.eval` clears every cache before running a plan.
 */
export class RuleCache {
  private readonly input: string;
  private readonly data: string;
  private readonly filledFlags: string[] = [];

  constructor(private readonly runtime: RuntimeModule) {
    const m = runtime.module;
    this.input = runtime.freshName('policy.eval.input');
    this.data = runtime.freshName('policy.eval.data');
    m.addGlobal(this.input, i32, true, m.i32.const(0));
    m.addGlobal(this.data, i32, true, m.i32.const(0));
  }

  /** Statements starting an evaluation: remember its documents and empty the caches. */
  startEvaluation(input: Expr, data: Expr): Expr[] {
    const m = this.runtime.module;
    return [
      m.global.set(this.input, input),
      m.global.set(this.data, data),
      ...this.filledFlags.map((flag) => m.global.set(flag, m.i32.const(0))),
    ];
  }

  /**
   * The body of a cacheable rule: `compute` evaluates it and leaves its value (or 0) in local
   * `result`. `eligible` is a free temporary; `input`/`data` the Wasm locals of its parameters.
   */
  wrap(rule: string, locals: { input: number; data: number; eligible: number; result: number }, compute: Expr[]): Expr {
    const m = this.runtime.module;
    const value = this.runtime.freshName(`policy.cache.${rule}`);
    const filled = this.runtime.freshName(`policy.cache.${rule}.filled`);
    m.addGlobal(value, i32, true, m.i32.const(0));
    m.addGlobal(filled, i32, true, m.i32.const(0));
    this.filledFlags.push(filled);
    const eligible = (): Expr => m.local.get(locals.eligible, i32);
    return m.block(
      null,
      [
        m.local.set(
          locals.eligible,
          m.i32.and(
            m.i32.eq(m.local.get(locals.input, i32), m.global.get(this.input, i32)),
            m.i32.eq(m.local.get(locals.data, i32), m.global.get(this.data, i32)),
          ),
        ),
        m.if(m.i32.and(eligible(), m.global.get(filled, i32)), m.return(m.global.get(value, i32))),
        ...compute,
        m.if(
          eligible(),
          m.block(null, [
            m.global.set(value, m.local.get(locals.result, i32)),
            m.global.set(filled, m.i32.const(1)),
          ]),
        ),
        m.local.get(locals.result, i32),
      ],
      i32,
    );
  }
}
