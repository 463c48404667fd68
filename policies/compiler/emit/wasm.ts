import binaryen from 'binaryen';
import { CompileError } from '../errors.ts';
import type { Block, Func, Plan, Policy } from '../plan/ir.ts';
import { builtinsCalledBy, CallTargets, type PlannedFunction } from './call-targets.ts';
import { Constants } from './constants.ts';
import { FunctionBody, type EmitContext } from './function-body.ts';
import { ITERATION_BUDGET_ABORT } from './iteration-budget-abi.ts';
import { IterationBudget } from './iteration-budget.ts';
import type { RuntimeFunction } from './runtime-abi.ts';
import { i32, RuntimeModule, signature } from './runtime-module.ts';
import { RuleCache } from './rule-cache.ts';
import { runtimeSubset } from './runtime-subset.ts';
import { validateModule } from './validate.ts';

type Expr = binaryen.ExpressionRef;

/**
 * Links the code generated for `policy` into the precompiled runtime: every IR function becomes
 * a Wasm function, every plan a branch of `gen.eval`, and the `gen.*` placeholder imports are
 * replaced. Returns an OPA-ABI module loadable with `@open-policy-agent/opa-wasm`.
 */
export function emitModule(policy: Policy, runtime: Uint8Array): Uint8Array<ArrayBuffer> {
  const rt = new RuntimeModule(runtimeSubset(runtime, calledFunctions(policy)));
  try {
    new PolicyLinker(rt, policy).link();
    rt.removeLinkExports();
    validateModule(rt.module);
    removeUnusedCode(rt.module);
    // emitBinary copies the bytes out of binaryen's heap into a fresh ArrayBuffer.
    return rt.module.emitBinary() as Uint8Array<ArrayBuffer>;
  } finally {
    rt.module.dispose();
  }
}

/**
 * The names every Call statement of the policy calls (its builtins, and its own functions), and
 * the native builtins the calls themselves call (CallTargets).
 */
function calledFunctions(policy: Policy): Set<string> {
  const called = new Set<string>();
  const visit = (blocks: readonly Block[]) => {
    for (const block of blocks) {
      for (const stmt of block.stmts) {
        if (stmt.op === 'Call') for (const func of builtinsCalledBy(stmt.func)) called.add(func);
        else if (stmt.op === 'Block') visit(stmt.blocks);
        else if (stmt.op === 'Scan' || stmt.op === 'Not') visit([stmt.block]);
      }
    }
  };
  for (const unit of [...policy.funcs, ...policy.plans]) visit(unit.blocks);
  return called;
}

/**
 * The only binaryen pass: drop the runtime code the policy never reaches (builtins it does not
 * call), which shrinks the module the host compiles on load. binaryen's optimiser does not pay
 * off here: measured on the bundled policies (CPU time per policy), emitting takes about 32 ms;
 * `optimize()` at -O1 takes 275 ms and at -O2 580 ms, optimising only the generated functions
 * 65 ms, and none of them made an evaluation more than 5% faster (most of its time is the
 * runtime parsing the input, looking up keys and writing the result as JSON, code already
 * optimised when the runtime was compiled).
 */
function removeUnusedCode(module: binaryen.Module): void {
  module.runPasses(['remove-unused-module-elements']);
}

class PolicyLinker {
  private readonly m: binaryen.Module;
  private readonly constants: Constants;
  private readonly functions = new Map<string, PlannedFunction>();
  private readonly calls: CallTargets;
  private readonly cache: RuleCache;
  private readonly budget: IterationBudget;
  private readonly runtimeNames = new Map<RuntimeFunction, string>();

  constructor(
    private readonly rt: RuntimeModule,
    private readonly policy: Policy,
  ) {
    this.m = rt.module;
    this.constants = new Constants(rt, policy.consts);
    for (const func of policy.funcs) {
      if (this.functions.has(func.name)) throw new CompileError('emit', `function ${func.name} is planned twice`);
      this.functions.set(func.name, { wasmName: rt.freshName(`policy.func.${func.name}`), params: func.params.length });
    }
    this.calls = new CallTargets(rt, this.functions);
    this.cache = new RuleCache(rt);
    this.budget = new IterationBudget(rt, () => this.abort(ITERATION_BUDGET_ABORT));
  }

  /** Stops the evaluation with `message`: the runtime calls the host's `opa_abort`, which does not return. */
  private abort(message: string): Expr {
    return this.m.block(null, [this.m.call(this.runtimeFunction('rt_abort'), [this.constants.string(message)], binaryen.none), this.m.unreachable()]);
  }

  link(): void {
    for (const func of this.policy.funcs) this.emitFunc(func);
    const plans = this.policy.plans.map((plan) => this.emitPlan(plan));
    this.rt.definePlaceholder('eval', [i32], this.evalBody(plans));
    this.rt.definePlaceholder('entrypoints', [], this.constants.json(JSON.stringify(this.entrypoints())));
    this.rt.definePlaceholder('zone_offset', [], this.calls.zoneOffsetBody());
    this.rt.definePlaceholder('builtins', [], this.constants.json(JSON.stringify(this.calls.hostBuiltins())));
    // Last: the constant array must include the strings added while generating the code above.
    const init = this.constants.initBody();
    this.rt.definePlaceholder('init', init.vars, init.body);
  }

  private context(origin: string): EmitContext {
    return {
      module: this.m,
      runtime: (name) => this.runtimeFunction(name),
      constant: (index) => this.constants.value(index),
      string: (text) => this.constants.string(text),
      callTarget: (func, argCount) => this.calls.target(func, argCount, origin),
      spendIteration: () => this.budget.spend(),
      abort: (message) => this.abort(message),
    };
  }

  private runtimeFunction(name: RuntimeFunction): string {
    let internal = this.runtimeNames.get(name);
    if (internal === undefined) {
      internal = this.rt.runtimeFunction(name);
      this.runtimeNames.set(name, internal);
    }
    return internal;
  }

  private emitFunc(func: Func): void {
    const origin = func.origin ? `${func.name} (${func.origin})` : func.name;
    if (func.params.length < 2) throw new CompileError('emit', `${origin}: a function takes input and data first`);
    const body = new FunctionBody(this.context(origin), {
      origin,
      locals: func.locals,
      params: func.params,
      extraParams: 0,
      blocks: func.blocks,
      readAfter: [func.result],
    });
    const result = body.wasmLocal(func.result);
    // A call is a step of the budget as a loop's iteration is: calls nest, and each may call twice.
    const compute = [this.budget.spend(), ...body.body()];
    // Only rules without arguments are cacheable; a function with arguments is never cached.
    const code =
      func.cacheable && func.params.length === 2
        ? this.cache.wrap(func.name, { input: 0, data: 1, eligible: body.temporary(), result }, compute)
        : this.m.block(null, [...compute, this.m.local.get(result, i32)], i32);
    const sig = signature(func.params.length, true);
    this.m.addFunction(this.functions.get(func.name)!.wasmName, sig.params, sig.results, body.vars(), code);
  }

  /** A plan becomes a function (input, data, resultSet) adding its results to the set. */
  private emitPlan(plan: Plan): string {
    if (plan.locals < 2) throw new CompileError('emit', `plan ${plan.name}: locals 0 and 1 hold input and data`);
    const body = new FunctionBody(this.context(plan.name), {
      origin: plan.name,
      locals: plan.locals,
      params: [0, 1],
      extraParams: 1,
      blocks: plan.blocks,
      readAfter: [],
    });
    const name = this.rt.freshName(`policy.plan.${plan.name}`);
    const code = this.m.block(null, body.body(), binaryen.none);
    const sig = signature(3, false);
    this.m.addFunction(name, sig.params, sig.results, body.vars(), code);
    return name;
  }

  /**
   * gen.eval(entrypoint, input, data): refill the iteration budget, clear the rule caches, create the result set, dispatch on
   * the entrypoint id with a `br_table`, and return the set. An unknown id aborts.
   */
  private evalBody(plans: string[]): Expr {
    const m = this.m;
    const [entrypoint, input, data, resultSet] = [0, 1, 2, 3];
    const labels = plans.map((_, id) => `entrypoint${id}`);
    let dispatch = m.switch(labels, 'unknown', m.local.get(entrypoint, i32));
    plans.forEach((plan, id) => {
      dispatch = m.block(null, [
        m.block(labels[id]!, [dispatch]),
        m.call(plan, [m.local.get(input, i32), m.local.get(data, i32), m.local.get(resultSet, i32)], binaryen.none),
        m.br('done'),
      ]);
    });
    return m.block(
      null,
      [
        this.budget.refill(),
        ...this.cache.startEvaluation(m.local.get(input, i32), m.local.get(data, i32)),
        m.local.set(resultSet, m.call(this.runtimeFunction('rt_make_set'), [], i32)),
        m.block('done', [
          m.block('unknown', [dispatch]),
          this.abort('invalid entrypoint id'),
        ]),
        m.local.get(resultSet, i32),
      ],
      i32,
    );
  }

  private entrypoints(): Record<string, number> {
    const ids: Record<string, number> = {};
    this.policy.plans.forEach((plan, id) => {
      if (Object.hasOwn(ids, plan.name)) throw new CompileError('emit', `entrypoint ${plan.name} is planned twice`);
      ids[plan.name] = id;
    });
    return ids;
  }
}
