/**
 * One OPA-ABI Wasm module instantiated with `@open-policy-agent/opa-wasm`, and the guard that
 * turns every way an evaluation can go wrong into a denial.
 *
 * Why evaluations always end: Rego has no unbounded loops (every iteration walks a finite
 * collection) and the checker refuses recursive rules and functions, so a compiled module runs a
 * bounded amount of work for a given input. What can still go wrong is reported, never thrown:
 *   - a trap (`unreachable`, out-of-bounds access): the runtime's way of stopping on a bug;
 *   - an abort: the module calls `opa_abort`, e.g. a complete rule with two different values;
 *   - exceeding a budget: the linear memory is capped (DEFAULT_MAX_MEMORY_PAGES unless told
 *     otherwise), so a runaway allocation or a huge input stops the evaluation within a fraction
 *     of a second instead of stalling the event loop or the process; the runtime's
 *     `numbers.range` refuses ranges beyond its size budget before building anything; and a
 *     module this compiler built counts its loop iterations and calls against an iteration
 *     budget (policies/compiler/emit/iteration-budget.ts), so a loop that allocates nothing ends
 *     too (modules built by `opa build` have no such budget);
 *   - a host builtin or the JSON round trip throwing.
 * The caller gets `error` and no value, and must deny ("fail closed"). A module that failed may
 * have been left half-way through an allocation, so it is replaced by a fresh instance of the
 * same compiled module before the next evaluation.
 */
import { createRequire } from 'node:module';
import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { DEFAULT_ITERATION_BUDGET, ITERATION_BUDGET_ABORT, SET_ITERATION_BUDGET } from '../compiler/emit/iteration-budget-abi.ts';
import { hostBuiltins, withEvaluationScope, type HostBuiltin, type PolicyOutput } from './host-builtins.ts';

// The SDK's ES module entry exports only the async `loadPolicy`; the synchronous variant, needed
// to replace a failed instance in the middle of a synchronous evaluation, is on its CommonJS entry.
const opa = createRequire(import.meta.url)('@open-policy-agent/opa-wasm') as typeof import('@open-policy-agent/opa-wasm');

/**
 * Linear memory in 64 KiB pages: start at OPA's default of 5, never exceed 64 MiB per module.
 * The cap is what bounds the time a runaway allocation holds the event loop (filling 256 MiB
 * took seconds, 64 MiB about 0.4 s), and it leaves room for the largest input the default 1 MiB
 * body limit admits: an array of empty objects, the costliest shape, takes about 20 MiB.
 */
export const INITIAL_MEMORY_PAGES = 5;
export const DEFAULT_MAX_MEMORY_PAGES = 1024;

/** What the runtime's budget aborts start with (policies/runtime/assembly/builtins/numbers.ts). */
const SIZE_BUDGET = 'size budget: ';

/** The budgets an instance evaluates within. */
export interface Budgets {
  /** Linear memory cap in 64 KiB pages (DEFAULT_MAX_MEMORY_PAGES). */
  maxMemoryPages?: number;
  /** Loop iterations and function calls per evaluation (DEFAULT_ITERATION_BUDGET), at most 2^31 − 1. */
  maxIterations?: number;
}

export interface EvaluationOutcome {
  /** The entrypoint's value; undefined when the policy produced none or failed. */
  value: unknown;
  /** Why the evaluation failed; absent on success. */
  error?: string;
  durationNs: number;
}

/**
 * The memory cap was reached: the runtime's heap aborts with "out of memory", and the SDK
 * copying the input in (or another runtime growing memory from the host) gets V8's RangeError.
 */
function exceededMemory(thrown: unknown): boolean {
  return thrown === 'out of memory' || (thrown instanceof RangeError && thrown.message.includes('Maximum memory size exceeded'));
}

/** A readable reason for whatever the SDK or the module threw, naming the budget when one was exceeded. */
export function describeFailure(thrown: unknown, budgets: Budgets = {}): string {
  if (exceededMemory(thrown)) {
    return budgets.maxMemoryPages === undefined ? 'policy exceeded its memory budget' : `policy exceeded its memory budget of ${budgets.maxMemoryPages / 16} MiB`;
  }
  if (thrown === ITERATION_BUDGET_ABORT) {
    const budget = budgets.maxIterations ?? DEFAULT_ITERATION_BUDGET;
    return `policy exceeded its iteration budget of ${budget.toLocaleString('en')} loop iterations and calls`;
  }
  if (typeof thrown === 'string' && thrown.startsWith(SIZE_BUDGET)) return `policy exceeded its size budget: ${thrown.slice(SIZE_BUDGET.length)}`;
  if (thrown instanceof WebAssembly.RuntimeError) return `policy trapped: ${thrown.message}`;
  if (thrown instanceof RangeError) return `policy ran out of memory or stack: ${thrown.message}`;
  if (typeof thrown === 'string') return `policy aborted: ${thrown}`;
  if (thrown instanceof Error) return `policy failed: ${thrown.message}`;
  if (typeof thrown === 'object' && thrown !== null && 'message' in thrown) {
    return `policy failed: ${String((thrown as { message: unknown }).message)}`;
  }
  return `policy failed: ${String(thrown)}`;
}

/** The iteration budget `budgets` give, checked: the module keeps it in a signed 32-bit global. */
export function iterationBudget(budgets: Budgets): number {
  const maxIterations = budgets.maxIterations ?? DEFAULT_ITERATION_BUDGET;
  if (!Number.isInteger(maxIterations) || maxIterations < 1 || maxIterations > 0x7fffffff) {
    throw new RangeError(`maxIterations must be an integer from 1 to ${0x7fffffff}, got ${maxIterations}`);
  }
  return maxIterations;
}

interface Limits {
  maxMemoryPages: number;
  maxIterations: number;
}

function instantiate(module: WebAssembly.Module, limits: Limits, data: unknown, builtins: Record<string, HostBuiltin>): LoadedPolicy {
  // A fresh descriptor each time: loadPolicySync writes into the one it is given.
  const memory = { initial: Math.min(INITIAL_MEMORY_PAGES, limits.maxMemoryPages), maximum: limits.maxMemoryPages };
  const policy = opa.loadPolicySync(module, memory, builtins);
  // The SDK's type leaves out the instance it keeps; a module `opa build` made has no budget to set.
  const { exports } = (policy as unknown as { wasmInstance: WebAssembly.Instance }).wasmInstance;
  const setBudget = exports[SET_ITERATION_BUDGET];
  if (typeof setBudget === 'function') setBudget(limits.maxIterations);
  policy.setData(data as object);
  return policy;
}

/**
 * The input as the SDK takes it ready-made: encoded here, since the SDK would treat falsy inputs
 * (`false`, `0`, `null`) as absent.
 */
function encodeInput(json: string | undefined): ArrayBuffer | undefined {
  if (json === undefined) return undefined;
  const bytes = new TextEncoder().encode(json);
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
  return (whole ? bytes.buffer : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)) as ArrayBuffer;
}

export class PolicyInstance {
  /** Entrypoint name → id, as the module reports them. */
  readonly entrypoints: ReadonlyMap<string, number>;
  private policy: LoadedPolicy;
  private data: unknown;
  /** Set when an evaluation failed: the next one starts from a fresh instance. */
  private failed = false;
  /** Where the policy's `print` lines and `trace` notes go; dropped while unset. */
  output: ((output: PolicyOutput) => void) | undefined;

  private constructor(
    private readonly module: WebAssembly.Module,
    private readonly limits: Limits,
    data: unknown,
    private readonly builtins: Record<string, HostBuiltin>,
  ) {
    this.data = data;
    this.policy = instantiate(module, limits, data, builtins);
    this.entrypoints = new Map(Object.entries(this.policy.entrypoints as Record<string, number>));
  }

  /**
   * Compiles and instantiates `wasm` with `data` as its data document, within `budgets`.
   * `extraBuiltins` are host functions beside the builtins, such as the probe calls of a traced
   * build (policies/compiler/probes.ts).
   */
  static async load(wasm: Uint8Array, data: unknown, budgets: Budgets = {}, extraBuiltins: Record<string, HostBuiltin> = {}): Promise<PolicyInstance> {
    const maxIterations = iterationBudget(budgets);
    const module = await WebAssembly.compile(wasm as BufferSource);
    const limits = { maxMemoryPages: budgets.maxMemoryPages ?? DEFAULT_MAX_MEMORY_PAGES, maxIterations };
    return new PolicyInstance(module, limits, data, { ...hostBuiltins, ...extraBuiltins });
  }

  /** Replaces the data document for later evaluations; throws when the module cannot hold it. */
  setData(data: unknown): void {
    this.data = data;
    if (this.failed) return;
    try {
      this.policy.setData(data as object);
    } catch (err) {
      this.failed = true;
      throw err;
    }
  }

  /** Evaluates one entrypoint on `input`; never throws (see the module comment). */
  evaluate(input: unknown, entrypoint: number): EvaluationOutcome {
    let json: string | undefined;
    try {
      json = input === undefined ? undefined : JSON.stringify(input);
    } catch (thrown) {
      return { value: undefined, error: describeFailure(thrown), durationNs: 0 };
    }
    return this.evaluateJson(json, entrypoint);
  }

  /**
   * Evaluates one entrypoint on an input given as its JSON text (undefined: no input), for a
   * caller that has the text already; never throws.
   */
  evaluateJson(json: string | undefined, entrypoint: number): EvaluationOutcome {
    const started = process.hrtime.bigint();
    try {
      if (this.failed) {
        this.policy = instantiate(this.module, this.limits, this.data, this.builtins);
        this.failed = false;
      }
      const resultSet = withEvaluationScope(() => this.policy.evaluate(encodeInput(json), entrypoint), this.output) as
        | Array<{ result: unknown }>
        | null;
      return { value: resultSet?.[0]?.result, durationNs: Number(process.hrtime.bigint() - started) };
    } catch (thrown) {
      this.failed = true;
      return { value: undefined, error: describeFailure(thrown, this.limits), durationNs: Number(process.hrtime.bigint() - started) };
    }
  }
}
