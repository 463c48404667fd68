import binaryen from 'binaryen';
import { DEFAULT_ITERATION_BUDGET, SET_ITERATION_BUDGET } from './iteration-budget-abi.ts';
import { i32, type RuntimeModule } from './runtime-module.ts';

type Expr = binaryen.ExpressionRef;

/**
 * Bounds the work of one evaluation. Memory is capped by the host, but a loop that allocates
 * nothing (`every i in numbers.range(1, 100000) { every j in numbers.range(1, 100000) { … } }`,
 * 10^10 steps) would hold the event loop for minutes. Every iteration of a scan and every call of
 * a planned function spends one step of the budget, refilled when an evaluation starts; the step
 * that finds it empty aborts the evaluation, and the engine denies. Loops and calls are the only
 * ways generated code repeats (Rego has no other loops and the checker refuses recursion), so the
 * budget bounds everything the generated code does; the runtime's builtins are bounded by the
 * size of what they are given. A step costs a global read, a compare and a write.
 */
export class IterationBudget {
  private readonly left: string;
  private readonly budget: string;

  constructor(
    private readonly rt: RuntimeModule,
    private readonly abort: () => Expr,
  ) {
    const m = rt.module;
    this.left = rt.freshName('policy.iterations.left');
    this.budget = rt.freshName('policy.iterations.budget');
    m.addGlobal(this.left, i32, true, m.i32.const(0));
    m.addGlobal(this.budget, i32, true, m.i32.const(DEFAULT_ITERATION_BUDGET));
    const setter = rt.freshName('policy.iterations.set');
    m.addFunction(setter, binaryen.createType([i32]), binaryen.none, [], m.global.set(this.budget, m.local.get(0, i32)));
    m.addFunctionExport(setter, SET_ITERATION_BUDGET);
  }

  /** Refills the budget: the first thing an evaluation does. */
  refill(): Expr {
    return this.rt.module.global.set(this.left, this.rt.module.global.get(this.budget, i32));
  }

  /** Spends one step, aborting when none is left. */
  spend(): Expr {
    const m = this.rt.module;
    const left = (): Expr => m.global.get(this.left, i32);
    return m.block(null, [m.if(m.i32.eqz(left()), this.abort()), m.global.set(this.left, m.i32.sub(left(), m.i32.const(1)))]);
  }
}
