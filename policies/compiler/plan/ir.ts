/**
 * The planner's intermediate representation, modelled on OPA's own IR (`opa build -t wasm` plans
 * Rego into the same block-structured form before emitting Wasm).
 *
 * Execution model:
 * - Every local holds a value reference or is undefined. Locals are numbered per function/plan.
 * - A statement either succeeds (execution continues with the next statement of its block) or
 *   fails. A failing statement ends the innermost enclosing block: execution resumes after that
 *   block. Nothing else is unwound; locals keep their values.
 * - A `BlockStmt` runs its blocks one after the other; each block fails or completes on its own.
 * - `BreakStmt` with index N leaves N+1 enclosing blocks: index 0 leaves the block holding the
 *   break (exactly like a failure), index 1 also leaves the block around that one, and so on.
 *   Only blocks count (the blocks of Block, Scan, Not and the top-level blocks of a function).
 * - Statements that read a local that is undefined fail, except `IsUndefined`, `ResetLocal`,
 *   `AssignOnce`'s target, and the arguments of a `Call` to a planned function (a function in
 *   `Policy.funcs`): those are passed as they are, because rules are evaluated even when no
 *   input was given (the input parameter is then undefined).
 * - A statement that fails leaves its target local undefined (Dot, Len, Call).
 */

export type Local = number;

/** An operand: a local, or a constant from `Policy.consts`. */
export type Operand = { local: Local } | { const: number };

export interface Block {
  stmts: Stmt[];
}

export type Stmt =
  /** Run each block in order. Never fails by itself. */
  | { op: 'Block'; blocks: Block[] }
  /** Leave `index + 1` enclosing blocks (0 = the current block). */
  | { op: 'Break'; index: number }
  /** target := source. */
  | { op: 'Assign'; source: Operand; target: Local }
  /**
   * target := source when target is undefined; when target is defined and not equal to source,
   * abort evaluation with `message` (a run-time conflict error, e.g. a complete rule producing two
   * values). When equal, nothing happens.
   */
  | { op: 'AssignOnce'; source: Operand; target: Local; message: string }
  /** target := undefined. */
  | { op: 'ResetLocal'; target: Local }
  /** target := source[key] (array index, object key or set membership); fails when undefined. */
  | { op: 'Dot'; source: Operand; key: Operand; target: Local }
  /** target := number of elements (array, object, set) or code points (string); fails otherwise. */
  | { op: 'Len'; source: Operand; target: Local }
  /**
   * For every element of source (array: index → item; object: key → value, in key order;
   * set: element → element, in element order): assign key and value locals and run `block`.
   * A failure inside `block` only ends that iteration. Scanning a scalar runs nothing.
   * The statement fails only when source is undefined.
   */
  | { op: 'Scan'; source: Local; key: Local; value: Local; block: Block }
  /** Run `block`; the statement fails if the block completes, succeeds if the block fails. */
  | { op: 'Not'; block: Block }
  /**
   * target := func(args…). `func` names either a planned function in `Policy.funcs` or a builtin
   * (e.g. `count`, `plus`, `object.get`, `internal.member_2`). Fails when the result is undefined,
   * and, for builtins only, when an argument is undefined.
   */
  | { op: 'Call'; func: string; args: Operand[]; target: Local }
  /** Fails unless a equals b (deep, OPA semantics: 1 == 1.0). */
  | { op: 'Equal'; a: Operand; b: Operand }
  /** Fails when a equals b. */
  | { op: 'NotEqual'; a: Operand; b: Operand }
  /** Fails when source is undefined. */
  | { op: 'IsDefined'; source: Local }
  /** Fails when source is defined. */
  | { op: 'IsUndefined'; source: Local }
  /** Fail unless source is of that kind. */
  | { op: 'IsArray'; source: Operand }
  | { op: 'IsObject'; source: Operand }
  | { op: 'IsSet'; source: Operand }
  | { op: 'MakeArray'; capacity: number; target: Local }
  | { op: 'MakeObject'; target: Local }
  | { op: 'MakeSet'; target: Local }
  | { op: 'ArrayAppend'; array: Local; value: Operand }
  /** object[key] := value, replacing any previous value. */
  | { op: 'ObjectInsert'; object: Local; key: Operand; value: Operand }
  /** object[key] := value; aborts with `message` when key holds a different value already. */
  | { op: 'ObjectInsertOnce'; object: Local; key: Operand; value: Operand; message: string }
  | { op: 'SetAdd'; set: Local; value: Operand }
  /** Add `{"result": value}` to the plan's result set. Only in plans. */
  | { op: 'ResultSetAdd'; value: Local };

/**
 * A planned function: a rule (params: input, data) or a user function (params: input, data,
 * args…). The blocks run in order like a Block statement; afterwards the function returns the
 * value of `result` (undefined when never assigned).
 */
export interface Func {
  name: string;
  params: Local[];
  result: Local;
  /** Number of locals used (all locals are numbered 0 … locals-1, params first). */
  locals: number;
  blocks: Block[];
  /**
   * When true (rules without arguments), the emitter may cache the result for the rest of one
   * evaluation, but only for calls whose input and data are the evaluation's own (a `with`
   * creates new documents and must not see or fill the cache).
   */
  cacheable: boolean;
  /** Where the rule or function was defined, for readable IR. */
  origin: string;
}

/**
 * An entrypoint plan. Local 0 holds the input (undefined when none was given), local 1 the data.
 * Its blocks add results with ResultSetAdd.
 */
export interface Plan {
  /** Entrypoint path with slashes: `gatehouse/decision_gate/v1/allow`. */
  name: string;
  locals: number;
  blocks: Block[];
}

/**
 * A constant as JSON text (`"1e3"`, `"\"abc\""`, `"[1,2]"`). Text keeps numbers exact as
 * written. Sets are never constants: the planner builds them with MakeSet/SetAdd.
 */
export type Const = string;

export interface Policy {
  consts: Const[];
  funcs: Func[];
  plans: Plan[];
}
