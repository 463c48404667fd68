import type { Body, Expr, Literal, Module, Pos, Rule, Term } from '../parse/ast.ts';
import type { Block, Const, Func, Local, Operand, Plan, Policy, Stmt } from './ir.ts';
import { CompileError } from '../errors.ts';
import { BUILTINS, OPERATOR_BUILTINS } from '../builtins.ts';
import { findNode, takesKeysFromBelow, type DataNode, type Program, type RuleGroup } from '../check/program.ts';
import { NameResolver, isWildcard, type Callee } from '../check/names.ts';
import { orderBody, topLevelVars } from '../check/safety.ts';
import { outputArgAsUnification } from '../check/output-args.ts';
import { PROBE_CALLS, type Probe, type ProbeKind, type ProbeSide } from '../probes.ts';

/**
 * Plans a checked program into the IR (see ir.ts), in the manner of OPA's planner: bodies are
 * planned in continuation-passing style, so the statements after an iteration are emitted inside
 * the iteration's block and a failing statement backtracks to the next element.
 */

/** The variables in scope while planning one body. */
interface Env {
  resolver: NameResolver;
  /** Bound variables and the locals holding them. */
  vars: ReadonlyMap<string, Local>;
  /** Names declared local (`some`, `:=`, patterns), which shadow rules and imports. */
  declared: ReadonlySet<string>;
  input: Local;
  data: Local;
  /** What `with` replaces while this body is planned, by target (see `Mock`). */
  mocks: ReadonlyMap<string, Mock>;
}

/**
 * What a `with` puts in place of a rule, a user function or a builtin for the literal it modifies
 * and everything that literal evaluates, rules it reads included: a value (a rule's value, or the
 * result of every call), or another function called with the same arguments.
 */
interface Mock {
  /** `data.a.rule`, `data.a.f` or a builtin's name. */
  target: string;
  value?: Local;
  callee?: Callee;
}

const NO_MOCKS: ReadonlyMap<string, Mock> = new Map();

/** The value mocks in the order a function planned with them takes them as extra parameters. */
function valueMocks(mocks: ReadonlyMap<string, Mock>): Mock[] {
  return [...mocks.values()].filter((m) => m.value !== undefined).sort((a, b) => (a.target < b.target ? -1 : 1));
}

function calleeName(callee: Callee): string {
  return 'group' in callee ? funcName(callee.group) : callee.builtin;
}

type Next = (env: Env) => void;
type OperandNext = (op: Operand, env: Env) => void;

const CONFLICT = {
  complete: 'complete rules must not produce multiple outputs',
  partialObject: 'object keys must be unique',
  function: 'functions must not produce multiple outputs for same inputs',
};

/** Rego accepts `.5`; JSON (the constant table's format) needs the leading zero. */
function jsonNumber(text: string): string {
  return text.replace(/^(-?)\./, '$10.');
}

/** JSON text of a ground term, or undefined when it is not plain JSON (vars, sets, non-string keys). */
function groundJson(term: Term): string | undefined {
  switch (term.type) {
    case 'null':
      return 'null';
    case 'boolean':
      return term.value ? 'true' : 'false';
    case 'number':
      return jsonNumber(term.value);
    case 'string':
      return JSON.stringify(term.value);
    case 'array': {
      const items = term.items.map(groundJson);
      return items.every((i) => i !== undefined) ? `[${items.join(',')}]` : undefined;
    }
    case 'object': {
      const parts: string[] = [];
      for (const [k, v] of term.entries) {
        const value = groundJson(v);
        if (k.type !== 'string' || value === undefined) return undefined;
        parts.push(`${JSON.stringify(k.value)}:${value}`);
      }
      return `{${parts.join(',')}}`;
    }
    default:
      return undefined;
  }
}

/** Names a body declares local: `:=` targets, `some` names and iteration patterns. */
function declaredIn(body: Body, into: Set<string>): Set<string> {
  const pattern = (t: Term | undefined): void => {
    if (!t) return;
    if (t.type === 'var') into.add(t.name);
    else if (t.type === 'array') t.items.forEach(pattern);
    else if (t.type === 'object') t.entries.forEach(([, v]) => pattern(v));
  };
  for (const lit of body) {
    const e = lit.expr;
    if (e.type === 'assign') pattern(e.left);
    else if (e.type === 'some') e.vars.forEach((v) => into.add(v.name));
    else if (e.type === 'somein') {
      pattern(e.key);
      pattern(e.value);
    }
  }
  return into;
}

function funcName(group: RuleGroup): string {
  return `data.${group.path.join('.')}`;
}

/** The IR of one function or plan under construction. */
class Frame {
  locals: number;
  cur: Stmt[];
  /** How many blocks enclose `cur`: what a Break needs to leave back to an outer block. */
  depth = 0;

  constructor(locals: number, cur: Stmt[]) {
    this.locals = locals;
    this.cur = cur;
  }
}

export class Planner {
  private readonly program: Program;
  private readonly consts: Const[] = [];
  private readonly constIndex = new Map<string, number>();
  private readonly funcs: Func[] = [];
  /** Functions planned or being planned, by name (a rule's own, or a variant with mocks). */
  private readonly planned = new Map<string, 'planning' | 'done'>();
  /** Names of the variants of rules planned with mocks, by rule and mocks. */
  private readonly variants = new Map<string, string>();
  /** The mocks of the function being planned, held in its parameters. */
  private mocks: ReadonlyMap<string, Mock> = NO_MOCKS;
  private frame = new Frame(0, []);
  private module!: Module;
  /** A traced build's probes (see probes.ts), by id; undefined when not tracing. */
  private readonly probes: Probe[] | undefined;
  private readonly probeIds = new Map<string, number>();
  /** The condition terms of probed expressions, whose values are reported, with their probe ids. */
  private readonly valueProbes = new WeakMap<Term, number>();

  constructor(program: Program, probes?: Probe[]) {
    this.program = program;
    this.probes = probes;
  }

  /**
   * Plans the given entrypoints (slash paths below data). Every rule is planned, so an error in a
   * rule no entrypoint reaches is still reported (as OPA does), but only reachable functions are
   * kept.
   */
  plan(entrypoints: string[]): Policy {
    const plans: Plan[] = entrypoints.map((name) => this.planEntrypoint(name));
    this.planEveryRule(this.program.root);
    return { consts: this.consts, funcs: reachable(this.funcs, plans), plans };
  }

  private planEveryRule(node: DataNode): void {
    if (node.group) {
      const def = node.group.definitions[0] ?? node.group.defaultRule!;
      this.module = def.module;
      this.funcFor(node.group, def.rule.pos);
    }
    for (const child of node.children.values()) this.planEveryRule(child);
  }

  // ---- emission helpers ----

  private fail(message: string, pos: Pos): never {
    throw new CompileError('check', message, pos, this.module?.source);
  }

  private emit(stmt: Stmt): void {
    this.frame.cur.push(stmt);
  }

  /** The id of the probe of `kind` at `pos`, made on first use; undefined when not tracing. */
  private probe(kind: ProbeKind, pos: Pos): number | undefined {
    if (!this.probes) return undefined;
    const key = `${kind}:${pos.file}:${pos.offset}`;
    let id = this.probeIds.get(key);
    if (id === undefined) {
      id = this.probes.length;
      this.probes.push({ kind, file: pos.file, line: pos.line, col: pos.col, offset: pos.offset });
      this.probeIds.set(key, id);
    }
    return id;
  }

  /** Emits the call reporting probe `id` entered or exited (nothing when not tracing). */
  private report(event: 'enter' | 'exit', id: number | undefined): void {
    if (id !== undefined) this.emit({ op: 'Call', func: PROBE_CALLS[event], args: [this.constOf(String(id))], target: this.local() });
  }

  /** Emits the call reporting a value of a probed condition term (nothing for other terms). */
  private reportValue(term: Term, side: ProbeSide, value: Operand): void {
    const id = this.valueProbes.get(term);
    if (id !== undefined) {
      this.emit({ op: 'Call', func: PROBE_CALLS.value, args: [this.constOf(String(id)), this.str(side), value], target: this.local() });
    }
  }

  private local(): Local {
    return this.frame.locals++;
  }

  /** Runs `fn` with statements going into a new block, which is returned. */
  private block(fn: () => void): Block {
    const outer = this.frame.cur;
    const stmts: Stmt[] = [];
    this.frame.cur = stmts;
    this.frame.depth++;
    try {
      fn();
    } finally {
      this.frame.cur = outer;
      this.frame.depth--;
    }
    return { stmts };
  }

  /**
   * Emits statements that succeed when one of the alternatives has a solution. Each alternative
   * plans statements and calls `solved` where a solution is reached. Iterations inside an
   * alternative never fail by themselves (a failure ends only one element), so completing the
   * alternative's block proves nothing: reaching `solved` sets a flag, and leaves all the
   * alternatives at once since one solution is enough.
   */
  private requireSolution(alternatives: Array<(solved: () => void) => void>): void {
    const found = this.local();
    this.emit({ op: 'ResetLocal', target: found });
    const all = this.block(() => {
      const depth = this.frame.depth;
      for (const plan of alternatives) {
        const alternative = this.block(() =>
          plan(() => {
            this.emit({ op: 'Assign', source: this.constOf('true'), target: found });
            this.emit({ op: 'Break', index: this.frame.depth - depth });
          }),
        );
        this.emit({ op: 'Block', blocks: [alternative] });
      }
    });
    this.emit({ op: 'Block', blocks: [all] });
    this.emit({ op: 'IsDefined', source: found });
  }

  private constOf(json: string): Operand {
    let index = this.constIndex.get(json);
    if (index === undefined) {
      index = this.consts.length;
      this.consts.push(json);
      this.constIndex.set(json, index);
    }
    return { const: index };
  }

  private str(s: string): Operand {
    return this.constOf(JSON.stringify(s));
  }

  /** A local holding the operand (constants are copied into one). */
  private toLocal(op: Operand): Local {
    if ('local' in op) return op.local;
    const l = this.local();
    this.emit({ op: 'Assign', source: op, target: l });
    return l;
  }

  private isLocalName(env: Env, name: string): boolean {
    return isWildcard(name) || env.vars.has(name) || env.declared.has(name) || !env.resolver.global(name);
  }

  /**
   * The environment of a closure (comprehension or `every` body) declaring `names`: as in OPA,
   * each is a new variable there, shadowing an outer variable of the same name.
   */
  private scope(env: Env, names: ReadonlySet<string>): Env {
    const vars = new Map([...env.vars].filter(([name]) => !names.has(name)));
    return { ...env, vars, declared: new Set([...env.declared, ...names]) };
  }

  private bind(env: Env, name: string, op: Operand): Env {
    const vars = new Map(env.vars);
    vars.set(name, this.toLocal(op));
    return { ...env, vars };
  }

  // ---- entrypoints and rules ----

  private planEntrypoint(name: string): Plan {
    const keys = name.split('/').filter((k) => k.length > 0);
    const node = findNode(this.program.root, keys);
    const first = this.program.modules[0];
    if (!first) throw new CompileError('check', 'no modules to compile');
    this.module = first;
    if (node?.group?.kind === 'function') {
      throw new CompileError('check', `entrypoint ${name} is a function, not a rule`);
    }
    this.frame = new Frame(2, []);
    const env: Env = {
      resolver: new NameResolver(this.program, first),
      vars: new Map(),
      declared: new Set(),
      input: 0,
      data: 1,
      mocks: NO_MOCKS,
    };
    const pos: Pos = { file: first.file, line: 1, col: 1, offset: 0 };
    const keyTerms: Term[] = keys.map((k) => ({ type: 'string', value: k, pos }));
    const stmts = this.block(() =>
      this.planDataRef(keyTerms, 0, env, (op) => this.emit({ op: 'ResultSetAdd', value: this.toLocal(op) })),
    );
    return { name: keys.join('/'), locals: this.frame.locals, blocks: [stmts] };
  }

  /**
   * Plans the function of a rule group on first use; returns its name. With mocks, it is a
   * variant of the rule that takes the mocked values as extra parameters (in `valueMocks` order)
   * and is never cached, since its value depends on them.
   */
  private funcFor(group: RuleGroup, pos: Pos, mocks: ReadonlyMap<string, Mock> = NO_MOCKS): string {
    const name = mocks.size === 0 ? funcName(group) : this.variantName(group, mocks);
    const state = this.planned.get(name);
    if (state === 'planning') {
      // As OPA does, name the rule and point at its definition rather than at the reference.
      const def = group.definitions[0] ?? group.defaultRule;
      throw new CompileError('check', `rule data.${group.path.join('.')} is recursive`, def?.rule.pos ?? pos, def?.module.source);
    }
    if (state === 'done') return name;
    this.planned.set(name, 'planning');
    const savedFrame = this.frame;
    const savedModule = this.module;
    const savedMocks = this.mocks;
    try {
      this.funcs.push(this.planGroup(group, name, mocks));
    } finally {
      this.frame = savedFrame;
      this.module = savedModule;
      this.mocks = savedMocks;
    }
    this.planned.set(name, 'done');
    return name;
  }

  private variantName(group: RuleGroup, mocks: ReadonlyMap<string, Mock>): string {
    const signature = [...mocks.values()]
      .map((m) => `${m.target}=${m.callee ? calleeName(m.callee) : 'value'}`)
      .sort()
      .join(',');
    const key = `${funcName(group)} with ${signature}`;
    let name = this.variants.get(key);
    if (!name) {
      name = `${funcName(group)}#with${this.variants.size}`;
      this.variants.set(key, name);
    }
    return name;
  }

  /** Emits a call of a rule group's function: its variant with the environment's mocks, when there are any. */
  private callGroup(group: RuleGroup, args: Operand[], env: Env, pos: Pos, target: Local): void {
    const func = this.funcFor(group, pos, env.mocks);
    const mocked = valueMocks(env.mocks).map((m): Operand => ({ local: m.value! }));
    this.emit({ op: 'Call', func, args: [{ local: env.input }, { local: env.data }, ...args, ...mocked], target });
  }

  private planGroup(group: RuleGroup, name: string, mocks: ReadonlyMap<string, Mock>): Func {
    const params: Local[] = [0, 1];
    for (let i = 0; i < group.arity; i++) params.push(2 + i);
    const own = new Map(mocks);
    for (const mock of valueMocks(mocks)) {
      const param = params.length;
      params.push(param);
      own.set(mock.target, { ...mock, value: param });
    }
    this.mocks = own;
    this.frame = new Frame(params.length, []);
    const result = this.local();
    const blocks: Block[] = [];
    if (group.kind === 'partialSet') blocks.push({ stmts: [{ op: 'MakeSet', target: result }] });
    if (group.kind === 'partialObject' || group.kind === 'partialObjectOfSets') {
      blocks.push({ stmts: [{ op: 'MakeObject', target: result }] });
    }
    for (const def of group.definitions) {
      this.module = def.module;
      blocks.push(...this.planDefinition(group, def.rule, def.module, params, result));
    }
    const node = findNode(this.program.root, group.path)!;
    const first = group.definitions[0];
    if (first && takesKeysFromBelow(group.kind) && node.children.size > 0) {
      this.module = first.module;
      const message = `${first.module.file}:${first.rule.pos.line}: eval_conflict_error: ${CONFLICT.partialObject}`;
      const env = this.ruleEnv(first.module, [], first.rule);
      blocks.push(this.block(() => this.mergeKeysFromBelow(group, node, result, env, message)));
    }
    if (group.defaultRule) {
      const { rule, module } = group.defaultRule;
      this.module = module;
      const value: Term = rule.value ?? { type: 'boolean', value: true, pos: rule.pos };
      blocks.push(
        this.block(() => {
          this.emit({ op: 'IsUndefined', source: result });
          this.planTerm(value, this.ruleEnv(module, [], rule), (op) => {
            this.report('exit', this.probe('head', rule.pos));
            this.emit({ op: 'Assign', source: op, target: result });
          });
        }),
      );
    }
    const origin = group.definitions[0] ?? group.defaultRule;
    return {
      name,
      params,
      result,
      locals: this.frame.locals,
      blocks,
      cacheable: group.kind !== 'function' && mocks.size === 0,
      origin: origin ? `${origin.module.file}:${origin.rule.pos.line}` : '',
    };
  }

  /** The environment at the start of a rule body: function arguments bound to their params. */
  private ruleEnv(module: Module, body: Body, rule: Rule): Env {
    const declared = declaredIn(body, new Set());
    for (const arg of rule.args ?? []) declaredIn([{ negated: false, with: [], pos: arg.pos, expr: { type: 'assign', left: arg, right: arg, pos: arg.pos } }], declared);
    return { resolver: new NameResolver(this.program, module), vars: new Map(), declared, input: 0, data: 1, mocks: this.mocks };
  }

  /** Binds function parameters to the argument patterns, then continues. */
  private bindArgs(rule: Rule, params: Local[], env: Env, k: Next): void {
    const args = rule.args ?? [];
    const step = (i: number, e: Env): void => {
      if (i === args.length) return k(e);
      this.unify(args[i]!, { local: params[2 + i]! }, e, (e2) => step(i + 1, e2));
    };
    step(0, env);
  }

  private headVars(rule: Rule, env: Env, terms: Array<Term | undefined>): Set<string> {
    const into = new Map<string, Pos>();
    const isLocal = (n: string): boolean => this.isLocalName(env, n);
    for (const t of terms) if (t) topLevelVars(t, isLocal, into);
    for (const a of rule.args ?? []) topLevelVars(a, isLocal, into);
    return new Set(into.keys());
  }

  /** Plans one body followed by `k`, ordering it for safety first. */
  private planBody(body: Body, env: Env, head: Array<Term | undefined>, k: Next, rule?: Rule): void {
    const isLocal = (n: string): boolean => this.isLocalName(env, n);
    const headVars = rule ? this.headVars(rule, env, head) : new Set<string>();
    if (!rule) {
      const into = new Map<string, Pos>();
      for (const t of head) if (t) topLevelVars(t, isLocal, into);
      for (const n of into.keys()) headVars.add(n);
    }
    const literals = body.map((lit) => this.markReplacements(outputArgAsUnification(lit, env.resolver, (n) => env.vars.has(n)), env));
    const { body: ordered } = orderBody(literals, new Set(env.vars.keys()), headVars, isLocal, this.module.source);
    const step = (i: number, e: Env): void => {
      if (i === ordered.length) return k(e);
      const lit = ordered[i]!;
      // `some x` only declares: OPA evaluates nothing there, and neither does a probe.
      const probe = lit.expr.type === 'some' ? undefined : this.probe('expr', lit.pos);
      if (probe !== undefined && lit.expr.type === 'term') this.valueProbes.set(lit.expr.term, probe);
      this.report('enter', probe);
      this.planLiteral(lit, e, (e2) => {
        this.report('exit', probe);
        step(i + 1, e2);
      });
    };
    step(0, env);
  }

  private planDefinition(group: RuleGroup, rule: Rule, module: Module, params: Local[], result: Local): Block[] {
    const value = (t: Term | undefined, pos: Pos): Term => t ?? { type: 'boolean', value: true, pos };
    const where = `${module.file}:${rule.pos.line}: eval_conflict_error: `;
    switch (group.kind) {
      case 'partialSet':
        return [
          this.block(() =>
            this.planBody(rule.body, this.ruleEnv(module, rule.body, rule), [rule.key], (env) =>
              this.planTerm(rule.key!, env, (op) => {
                this.report('exit', this.probe('head', rule.pos));
                this.emit({ op: 'SetAdd', set: result, value: op });
              }),
            rule),
          ),
        ];
      case 'partialObject':
      case 'partialObjectOfSets': {
        const message = where + CONFLICT.partialObject;
        const keys = [rule.key!, ...(rule.subKeys ?? [])];
        return [
          this.block(() =>
            this.planBody(rule.body, this.ruleEnv(module, rule.body, rule), [...keys, rule.value], (env) =>
              this.planTerms([...keys, value(rule.value, rule.pos)], env, (ops) => {
                this.report('exit', this.probe('head', rule.pos));
                const v = ops.pop()!;
                const leaf = ops.pop()!;
                const object = ops.reduce((parent, key) => this.collectionAt(parent, key, 'object', message), result);
                if (group.kind === 'partialObject') this.emit({ op: 'ObjectInsertOnce', object, key: leaf, value: v, message });
                else this.emit({ op: 'SetAdd', set: this.collectionAt(object, leaf, 'set', message), value: v });
              }),
            rule),
          ),
        ];
      }
      case 'complete':
      case 'function': {
        const message = where + (group.kind === 'function' ? CONFLICT.function : CONFLICT.complete);
        const clauses = [{ body: rule.body, value: rule.value, pos: rule.pos }, ...rule.else];
        const single = clauses.length === 1;
        const target = single ? result : this.local();
        const blocks: Block[] = [];
        if (!single) blocks.push({ stmts: [{ op: 'ResetLocal', target }] });
        clauses.forEach((clause, i) => {
          blocks.push(
            this.block(() => {
              if (i > 0) this.emit({ op: 'IsUndefined', source: target });
              const env = this.ruleEnv(module, clause.body, rule);
              this.bindArgs(rule, params, env, (argEnv) =>
                this.planBody(clause.body, argEnv, [clause.value], (bodyEnv) =>
                  this.planTerm(value(clause.value, clause.pos), bodyEnv, (v) => {
                    this.report('exit', this.probe('head', clause.pos));
                    this.emit({ op: 'AssignOnce', source: v, target, message });
                  }),
                rule),
              );
            }),
          );
        });
        if (!single) blocks.push({ stmts: [{ op: 'AssignOnce', source: { local: target }, target: result, message }] });
        return blocks;
      }
    }
  }

  /**
   * The object or set at parent[key], created when the key has none yet; a value there of
   * another kind is a conflict (`p[k] := 1` beside `p[k].r := 2`), reported as OPA does.
   */
  private collectionAt(parent: Local, key: Operand, kind: 'object' | 'set', message: string): Local {
    const [make, is] = kind === 'object' ? (['MakeObject', 'IsObject'] as const) : (['MakeSet', 'IsSet'] as const);
    const child = this.local();
    this.emit({ op: 'ResetLocal', target: child });
    this.emit({ op: 'Block', blocks: [{ stmts: [{ op: 'Dot', source: { local: parent }, key, target: child }] }] });
    this.emit({
      op: 'Block',
      blocks: [{ stmts: [
        { op: 'IsUndefined', source: child },
        { op: make, target: child },
        { op: 'ObjectInsert', object: parent, key, value: { local: child } },
      ] }],
    });
    // Inserting an empty collection where a value of another kind is aborts with the conflict.
    const empty = this.local();
    const ofKind = this.block(() => this.emit({ op: is, source: { local: child } }));
    this.emit({
      op: 'Block',
      blocks: [{ stmts: [
        { op: 'Not', block: ofKind },
        { op: make, target: empty },
        { op: 'ObjectInsertOnce', object: parent, key, value: { local: empty }, message },
      ] }],
    });
    return child;
  }

  // ---- literals ----

  private planLiteral(lit: Literal, env: Env, k: Next): void {
    if (lit.with.length > 0) return this.planWith(lit, env, k);
    if (lit.negated) {
      const inner = this.block(() => this.requireSolution([(solved) => this.planExpr(lit.expr, env, solved)]));
      this.emit({ op: 'Not', block: inner });
      return k(env);
    }
    this.planExpr(lit.expr, env, k);
  }

  /**
   * `lit with input.a as v with data.b as w with data.x.rule as r with count as f`: plans the
   * literal against patched documents and with the rules, functions and builtins replaced.
   */
  private planWith(lit: Literal, env: Env, k: Next): void {
    const step = (i: number, e: Env): void => {
      if (i === lit.with.length) {
        const bare: Literal = { ...lit, with: [] };
        return this.planLiteral(bare, e, (after) => k({ ...after, input: env.input, data: env.data, mocks: env.mocks }));
      }
      const w = lit.with[i]!;
      const target = this.withTarget(w.target, e);
      if ('mock' in target) {
        const callee = w.replacement ? this.replacementFunction(w.value, target.arity!, e) : undefined;
        if (callee) return step(i + 1, this.withMock(e, { target: target.mock, callee }));
        return this.planTerm(w.value, e, (value, e2) => step(i + 1, this.withMock(e2, { target: target.mock, value: this.toLocal(value) })));
      }
      this.planTerm(w.value, e, (value, e2) => {
        const doc = target.root === 'input' ? e2.input : e2.data;
        const patched = this.upsert(doc, target.path, value, target.root === 'input');
        step(i + 1, target.root === 'input' ? { ...e2, input: patched } : { ...e2, data: patched });
      });
    };
    step(0, env);
  }

  /** The literal with each `with` whose value names a replacement function marked (see `With.replacement`). */
  private markReplacements(lit: Literal, env: Env): Literal {
    if (lit.with.length === 0) return lit;
    const withs = lit.with.map((w) => {
      const target = this.withTarget(w.target, env);
      const replaces = 'mock' in target && target.arity !== undefined && this.replacementFunction(w.value, target.arity, env);
      return replaces ? { ...w, replacement: true } : w;
    });
    return { ...lit, with: withs };
  }

  private withMock(env: Env, mock: Mock): Env {
    return { ...env, mocks: new Map(env.mocks).set(mock.target, mock) };
  }

  /** The function a `with` value names in place of a function of `arity` arguments, if it names one. */
  private replacementFunction(value: Term, arity: number, env: Env): Callee | undefined {
    if (value.type !== 'var' && value.type !== 'ref') return undefined;
    const found = env.resolver.lookupCallee(value, (n) => env.declared.has(n));
    if ('error' in found) return undefined;
    const replacementArity = 'group' in found ? found.group.arity : BUILTINS[found.builtin]!.arity;
    if (replacementArity !== arity) {
      this.fail(`with: ${calleeName(found)} takes ${replacementArity} arguments, the function it replaces ${arity}`, value.pos);
    }
    return found;
  }

  /**
   * What a `with` replaces: a path below input or base data (patched), or a rule, a function or a
   * builtin (mocked; `arity` is set for functions and builtins).
   */
  private withTarget(target: Term, env: Env): { root: 'input' | 'data'; path: string[] } | { mock: string; arity?: number } {
    let head: Term = target;
    let keys: Term[] = [];
    if (target.type === 'ref') {
      head = target.head;
      keys = target.path;
    }
    const bound = head.type === 'var' && env.vars.has(head.name);
    const g = head.type === 'var' && !bound ? env.resolver.global(head.name) : undefined;
    const path = [...(g?.path ?? [])];
    for (const key of keys) {
      if (key.type !== 'string') this.fail('with target paths must use constant keys', key.pos);
      path.push(key.value);
    }
    if (!g) {
      const builtin = head.type === 'var' && !bound ? [head.name, ...path].join('.') : '';
      if (BUILTINS[builtin]) return { mock: builtin, arity: BUILTINS[builtin]!.arity };
      this.fail('with target must be input, data, a path below them, a rule, a function or a builtin', target.pos);
    }
    if (g.root === 'data') {
      let node: DataNode | undefined = this.program.root;
      for (const [i, key] of path.entries()) {
        node = node?.children.get(key);
        const group = node?.group;
        if (!group) continue;
        if (i < path.length - 1) this.fail(`with on a part of rule data.${group.path.join('.')} is not supported: replace the whole rule`, target.pos);
        return group.kind === 'function' ? { mock: funcName(group), arity: group.arity } : { mock: funcName(group) };
      }
      if (node && node.children.size > 0) this.fail(`with on data.${path.join('.')} would replace rules, which is not supported`, target.pos);
    }
    return { root: g.root, path };
  }

  /** A copy of doc with value at path; an undefined input document counts as empty. */
  private upsert(doc: Local, path: string[], value: Operand, mayBeUndefined: boolean): Local {
    if (path.length === 0) return this.toLocal(value);
    const out = this.local();
    const pathConst = this.constOf(JSON.stringify(path));
    if (mayBeUndefined) this.emit({ op: 'ResetLocal', target: out });
    this.emit({
      op: 'Block',
      blocks: [
        { stmts: [{ op: 'Call', func: 'internal.upsert', args: [{ local: doc }, pathConst, value], target: out }] },
        ...(mayBeUndefined
          ? [{ stmts: [
              { op: 'IsUndefined', source: out } as Stmt,
              { op: 'Call', func: 'internal.upsert', args: [this.constOf('{}'), pathConst, value], target: out } as Stmt,
            ] }]
          : []),
      ],
    });
    return out;
  }

  private planExpr(expr: Expr, env: Env, k: Next): void {
    switch (expr.type) {
      case 'term':
        return this.planCondition(expr.term, env, k);
      case 'assign':
      case 'unify':
        return this.unifyTerms(expr.left, expr.right, env, k);
      case 'some':
        return k(env);
      case 'somein':
        return this.planTerm(expr.collection, env, (coll, e) => {
          const source = this.toLocal(coll);
          const key = this.local();
          const value = this.local();
          const block = this.block(() => {
            const withValue = (e2: Env): void => this.unify(expr.value, { local: value }, e2, k);
            if (expr.key) this.unify(expr.key, { local: key }, e, withValue);
            else withValue(e);
          });
          this.emit({ op: 'Scan', source, key, value, block });
        });
      case 'every':
        return this.planEvery(expr, env, k);
    }
  }

  /**
   * A term used as a condition: comparisons become Equal/NotEqual, a relation called without its
   * output holds once when it has an answer (as OPA plans it), others must not be false.
   */
  private planCondition(term: Term, env: Env, k: Next): void {
    if (term.type === 'call' && this.isRelation(term, env)) {
      return this.planCall(term, env, (answers, e) => {
        const n = this.local();
        this.emit({ op: 'Len', source: answers, target: n });
        this.emit({ op: 'NotEqual', a: { local: n }, b: this.constOf('0') });
        k(e);
      }, false);
    }
    if (term.type === 'binop' && (term.op === '==' || term.op === '!=')) {
      return this.planTerm(term.left, env, (a, e) => {
        this.reportValue(term, 'left', a);
        this.planTerm(term.right, e, (b, e2) => {
          this.reportValue(term, 'right', b);
          this.emit({ op: term.op === '==' ? 'Equal' : 'NotEqual', a, b });
          k(e2);
        });
      });
    }
    this.planTerm(term, env, (op, e) => {
      this.reportValue(term, 'value', op);
      this.emit({ op: 'NotEqual', a: op, b: this.constOf('false') });
      k(e);
    });
  }

  /**
   * `every k, v in domain { body }`: holds when the domain is a collection and the body has a
   * solution for each of its elements (a `some` in the body is existential per element).
   */
  private planEvery(expr: Extract<Expr, { type: 'every' }>, env: Env, k: Next): void {
    this.planTerm(expr.domain, env, (dom, e) => {
      const source = this.toLocal(dom);
      this.requireSolution(
        (['IsArray', 'IsObject', 'IsSet'] as const).map((op) => (solved: () => void) => {
          this.emit({ op, source: { local: source } });
          solved();
        }),
      );
      const key = this.local();
      const value = this.local();
      const failed = this.local();
      this.emit({ op: 'ResetLocal', target: failed });
      const own = declaredIn(expr.body, new Set());
      for (const t of [expr.key, expr.value]) if (t) declaredIn([{ negated: false, with: [], pos: t.pos, expr: { type: 'assign', left: t, right: t, pos: t.pos } }], own);
      const scopedEnv = this.scope(e, own);
      const holds = (solved: () => void): void => {
        const withValue = (e2: Env): void => this.unify(expr.value, { local: value }, e2, (e3) => this.planBody(expr.body, e3, [], solved));
        if (expr.key) this.unify(expr.key, { local: key }, scopedEnv, withValue);
        else withValue(scopedEnv);
      };
      const scan = this.block(() => {
        this.emit({ op: 'Not', block: this.block(() => this.requireSolution([holds])) });
        this.emit({ op: 'Assign', source: this.constOf('true'), target: failed });
        this.emit({ op: 'Break', index: 1 });
      });
      this.emit({ op: 'Block', blocks: [{ stmts: [{ op: 'Scan', source, key, value, block: scan }] }] });
      this.emit({ op: 'IsUndefined', source: failed });
      k(e);
    });
  }

  // ---- unification ----

  private unboundVar(t: Term, env: Env): string | undefined {
    return t.type === 'var' && !env.vars.has(t.name) && this.isLocalName(env, t.name) ? t.name : undefined;
  }

  private hasUnbound(t: Term, env: Env): boolean {
    if (this.unboundVar(t, env)) return true;
    if (t.type === 'array') return t.items.some((i) => this.hasUnbound(i, env));
    if (t.type === 'object') return t.entries.some(([, v]) => this.hasUnbound(v, env));
    return false;
  }

  private unifyTerms(a: Term, b: Term, env: Env, k: Next): void {
    if (this.hasUnbound(a, env) && this.hasUnbound(b, env)) {
      if (a.type === 'array' && b.type === 'array') {
        if (a.items.length !== b.items.length) {
          this.emit({ op: 'Break', index: 0 });
          return;
        }
        const step = (i: number, e: Env): void =>
          i === a.items.length ? k(e) : this.unifyTerms(a.items[i]!, b.items[i]!, e, (e2) => step(i + 1, e2));
        return step(0, env);
      }
      if (a.type === 'object' && b.type === 'object') return this.unifyObjects(a, b, env, k);
      this.fail('cannot unify: both sides hold unbound variables', a.pos);
    }
    if (this.hasUnbound(a, env)) return this.planTerm(b, env, (op, e) => this.unify(a, op, e, k));
    if (this.hasUnbound(b, env)) return this.planTerm(a, env, (op, e) => this.unify(b, op, e, k));
    this.planTerm(a, env, (x, e) =>
      this.planTerm(b, e, (y, e2) => {
        this.emit({ op: 'Equal', a: x, b: y });
        k(e2);
      }),
    );
  }

  /** Two object literals unify key by key when their (constant) keys are the same. */
  private unifyObjects(a: Extract<Term, { type: 'object' }>, b: Extract<Term, { type: 'object' }>, env: Env, k: Next): void {
    const keyOf = (t: Term): string => {
      const json = groundJson(t);
      if (json === undefined) this.fail('cannot unify objects whose keys are not constants', t.pos);
      return json;
    };
    const right = new Map(b.entries.map(([key, value]) => [keyOf(key), value]));
    const pairs: Array<[Term, Term]> = [];
    for (const [key, value] of a.entries) {
      const other = right.get(keyOf(key));
      if (other) pairs.push([value, other]);
    }
    if (pairs.length !== a.entries.length || pairs.length !== right.size) {
      this.emit({ op: 'Break', index: 0 });
      return;
    }
    const step = (i: number, e: Env): void =>
      i === pairs.length ? k(e) : this.unifyTerms(pairs[i]![0], pairs[i]![1], e, (e2) => step(i + 1, e2));
    step(0, env);
  }

  /** Unifies a pattern with a planned value: binds its unbound variables, checks the rest. */
  private unify(pattern: Term, value: Operand, env: Env, k: Next): void {
    const name = this.unboundVar(pattern, env);
    if (name) return k(this.bind(env, name, value));
    if (pattern.type === 'array' && this.hasUnbound(pattern, env)) {
      const v = this.toLocal(value);
      const n = this.local();
      this.emit({ op: 'IsArray', source: { local: v } });
      this.emit({ op: 'Len', source: { local: v }, target: n });
      this.emit({ op: 'Equal', a: { local: n }, b: this.constOf(String(pattern.items.length)) });
      const step = (i: number, e: Env): void => {
        if (i === pattern.items.length) return k(e);
        const item = this.local();
        this.emit({ op: 'Dot', source: { local: v }, key: this.constOf(String(i)), target: item });
        this.unify(pattern.items[i]!, { local: item }, e, (e2) => step(i + 1, e2));
      };
      return step(0, env);
    }
    if (pattern.type === 'object' && this.hasUnbound(pattern, env)) {
      const v = this.toLocal(value);
      const n = this.local();
      this.emit({ op: 'IsObject', source: { local: v } });
      this.emit({ op: 'Len', source: { local: v }, target: n });
      this.emit({ op: 'Equal', a: { local: n }, b: this.constOf(String(pattern.entries.length)) });
      const step = (i: number, e: Env): void => {
        if (i === pattern.entries.length) return k(e);
        const [keyTerm, valueTerm] = pattern.entries[i]!;
        this.planTerm(keyTerm, e, (key, e2) => {
          const item = this.local();
          this.emit({ op: 'Dot', source: { local: v }, key, target: item });
          this.unify(valueTerm, { local: item }, e2, (e3) => step(i + 1, e3));
        });
      };
      return step(0, env);
    }
    this.planTerm(pattern, env, (op, e) => {
      this.emit({ op: 'Equal', a: op, b: value });
      k(e);
    });
  }

  // ---- terms ----

  private planTerms(terms: Term[], env: Env, k: (ops: Operand[], env: Env) => void): void {
    const ops: Operand[] = [];
    const step = (i: number, e: Env): void => {
      if (i === terms.length) return k(ops, e);
      this.planTerm(terms[i]!, e, (op, e2) => {
        ops.push(op);
        step(i + 1, e2);
      });
    };
    step(0, env);
  }

  private planTerm(term: Term, env: Env, k: OperandNext): void {
    const json = groundJson(term);
    if (json !== undefined) return k(this.constOf(json), env);
    switch (term.type) {
      case 'var':
        return this.planVar(term, env, k);
      case 'ref':
        return this.planRef(term, env, k);
      case 'array':
        return this.planTerms(term.items, env, (ops, e) => {
          const t = this.local();
          this.emit({ op: 'MakeArray', capacity: ops.length, target: t });
          for (const value of ops) this.emit({ op: 'ArrayAppend', array: t, value });
          k({ local: t }, e);
        });
      case 'set':
        return this.planTerms(term.items, env, (ops, e) => {
          const t = this.local();
          this.emit({ op: 'MakeSet', target: t });
          for (const value of ops) this.emit({ op: 'SetAdd', set: t, value });
          k({ local: t }, e);
        });
      case 'object':
        return this.planTerms(term.entries.flat(), env, (ops, e) => {
          const t = this.local();
          this.emit({ op: 'MakeObject', target: t });
          for (let i = 0; i < ops.length; i += 2) {
            this.emit({ op: 'ObjectInsert', object: t, key: ops[i]!, value: ops[i + 1]! });
          }
          k({ local: t }, e);
        });
      case 'arraycomp':
      case 'setcomp':
      case 'objectcomp':
        return k({ local: this.planComprehension(term, env) }, env);
      case 'call':
        return this.planCall(term, env, k);
      case 'binop':
        return this.planTerms([term.left, term.right], env, (ops, e) => {
          this.reportValue(term, 'left', ops[0]!);
          this.reportValue(term, 'right', ops[1]!);
          this.callBuiltin(OPERATOR_BUILTINS[term.op]!, ops, e, k);
        });
      case 'neg':
        return this.planTerm(term.operand, env, (op, e) => this.callBuiltin('minus', [this.constOf('0'), op], e, k));
      case 'member': {
        const parts = term.key ? [term.key, term.value, term.collection] : [term.value, term.collection];
        return this.planTerms(parts, env, (ops, e) =>
          this.callBuiltin(term.key ? 'internal.member_3' : 'internal.member_2', ops, e, k),
        );
      }
      default:
        this.fail(`unexpected ${term.type} term`, term.pos);
    }
  }

  private callBuiltin(name: string, args: Operand[], env: Env, k: OperandNext): void {
    const t = this.local();
    this.emit({ op: 'Call', func: name, args, target: t });
    k({ local: t }, env);
  }

  private planVar(term: Extract<Term, { type: 'var' }>, env: Env, k: OperandNext): void {
    const bound = env.vars.get(term.name);
    if (bound !== undefined) return k({ local: bound }, env);
    if (!env.declared.has(term.name)) {
      const g = env.resolver.global(term.name);
      if (g) return this.planRef({ type: 'ref', head: term, path: [], pos: term.pos }, env, k);
    }
    this.fail(`var ${isWildcard(term.name) ? '_' : term.name} is unsafe`, term.pos);
  }

  private planComprehension(term: Extract<Term, { type: 'arraycomp' | 'setcomp' | 'objectcomp' }>, env: Env): Local {
    const t = this.local();
    this.emit(
      term.type === 'arraycomp'
        ? { op: 'MakeArray', capacity: 0, target: t }
        : term.type === 'setcomp'
          ? { op: 'MakeSet', target: t }
          : { op: 'MakeObject', target: t },
    );
    const inner = this.scope(env, declaredIn(term.body, new Set()));
    const head = term.type === 'objectcomp' ? [term.key, term.value] : [term.head];
    const body = this.block(() =>
      this.planBody(term.body, inner, head, (e) => {
        if (term.type === 'objectcomp') {
          this.planTerm(term.key, e, (key, e2) =>
            this.planTerm(term.value, e2, (value) =>
              this.emit({ op: 'ObjectInsertOnce', object: t, key, value, message: `${this.module.file}:${term.pos.line}: eval_conflict_error: ${CONFLICT.partialObject}` }),
            ),
          );
        } else {
          this.planTerm(term.head, e, (value) =>
            this.emit(term.type === 'arraycomp' ? { op: 'ArrayAppend', array: t, value } : { op: 'SetAdd', set: t, value }),
          );
        }
      }),
    );
    this.emit({ op: 'Block', blocks: [body] });
    return t;
  }

  /** Whether a call names a relation builtin (see `BuiltinSpec.relation`). */
  private isRelation(term: Extract<Term, { type: 'call' }>, env: Env): boolean {
    const target = env.resolver.callee(term.callee, (name) => env.vars.has(name));
    return 'builtin' in target && BUILTINS[target.builtin]!.relation === true;
  }

  /**
   * A call's result; for a relation, each of its answers in turn (`eachAnswer`), as OPA plans
   * `walk`: the builtin returns the answers and the call scans them.
   */
  private planCall(term: Extract<Term, { type: 'call' }>, env: Env, k: OperandNext, eachAnswer = true): void {
    const target = env.resolver.callee(term.callee, (name) => env.vars.has(name));
    const arity = 'group' in target ? target.group.arity : BUILTINS[target.builtin]!.arity;
    if (arity !== term.args.length) {
      const name = 'group' in target ? `data.${target.group.path.join('.')}` : target.builtin;
      this.fail(`${name}: arity mismatch: expected ${arity} arguments, got ${term.args.length}`, term.pos);
    }
    const mock = env.mocks.get(calleeName(target));
    const answers = (result: Local, e: Env): void => {
      if (!eachAnswer || !('builtin' in target) || !BUILTINS[target.builtin]!.relation) return k({ local: result }, e);
      const key = this.local();
      const value = this.local();
      const block = this.block(() => k({ local: value }, e));
      this.emit({ op: 'Scan', source: result, key, value, block });
    };
    this.planTerms(term.args, env, (ops, e) => {
      if (mock?.value !== undefined) return answers(mock.value, e);
      const callee = mock?.callee ?? target;
      const t = this.local();
      if ('group' in callee) {
        // As in OPA, the replacement sees the function it replaces as it is (`with f as g` where
        // g calls f does not recurse); the other mocks still apply.
        const mocks = new Map(e.mocks);
        if (mock) mocks.delete(mock.target);
        this.callGroup(callee.group, ops, { ...e, mocks }, term.pos, t);
      } else {
        this.emit({ op: 'Call', func: callee.builtin, args: ops, target: t });
      }
      answers(t, e);
    });
  }

  // ---- references ----

  private planRef(term: Extract<Term, { type: 'ref' }>, env: Env, k: OperandNext): void {
    const head = term.head;
    if (head.type === 'var') {
      const bound = env.vars.get(head.name);
      if (bound !== undefined) return this.planDots(bound, term.path, 0, env, k);
      const g = env.declared.has(head.name) ? undefined : env.resolver.global(head.name);
      if (!g) this.fail(`var ${isWildcard(head.name) ? '_' : head.name} is unsafe`, head.pos);
      const prefix: Term[] = g.path.map((key) => ({ type: 'string', value: key, pos: head.pos }));
      const keys = [...prefix, ...term.path];
      if (g.root === 'input') return this.planDots(env.input, keys, 0, env, k);
      return this.planDataRef(keys, 0, env, k);
    }
    this.planTerm(head, env, (op, e) => this.planDots(this.toLocal(op), term.path, 0, e, k));
  }

  /** Walks the keys of a ref from a value: constant keys are lookups, unbound variables iterate. */
  private planDots(source: Local, keys: Term[], i: number, env: Env, k: OperandNext): void {
    if (i === keys.length) return k({ local: source }, env);
    const key = keys[i]!;
    const name = this.unboundVar(key, env);
    if (name) {
      const keyLocal = this.local();
      const value = this.local();
      const block = this.block(() => this.planDots(value, keys, i + 1, this.bind(env, name, { local: keyLocal }), k));
      this.emit({ op: 'Scan', source, key: keyLocal, value, block });
      return;
    }
    this.planTerm(key, env, (keyOp, e) => {
      const t = this.local();
      this.emit({ op: 'Dot', source: { local: source }, key: keyOp, target: t });
      this.planDots(t, keys, i + 1, e, k);
    });
  }

  /**
   * A ref below `data`: constant keys walk the rule tree; reaching a rule calls it; stopping at a
   * package (a variable key, or the end of the ref) builds that package's document; a key no rule
   * or package has continues in the base documents.
   */
  private planDataRef(keys: Term[], start: number, env: Env, k: OperandNext): void {
    let node: DataNode = this.program.root;
    let i = start;
    while (i < keys.length) {
      const key = keys[i]!;
      if (key.type !== 'string') break;
      const child = node.children.get(key.value);
      if (!child) return this.planDots(env.data, keys, start, env, k);
      node = child;
      i++;
      if (node.group) {
        const group = node.group;
        if (group.kind === 'function') this.fail(`function data.${group.path.join('.')} must be called`, key.pos);
        const mocked = env.mocks.get(funcName(group))?.value;
        if (mocked !== undefined) return this.planDots(mocked, keys, i, env, k);
        const t = this.local();
        this.callGroup(group, [], env, key.pos, t);
        return this.planDots(t, keys, i, env, k);
      }
    }
    if (node.children.size === 0 && node === this.program.root) return this.planDots(env.data, keys, start, env, k);
    const path = keys.slice(start, i).map((t) => (t as Extract<Term, { type: 'string' }>).value);
    const doc = this.virtualDoc(node, path, env);
    this.planDots(doc, keys, i, env, k);
  }

  /** Emits a block that takes the rule's value (its mock's or a call's) and, when it is defined, runs `use` with it. */
  private withRuleValue(group: RuleGroup, env: Env, use: (value: Local) => void): void {
    const mocked = env.mocks.get(funcName(group))?.value;
    const t = mocked ?? this.local();
    const pos = group.definitions[0]?.rule.pos ?? group.defaultRule!.rule.pos;
    const block = this.block(() => {
      if (mocked === undefined) this.callGroup(group, [], env, pos, t);
      use(t);
    });
    this.emit({ op: 'Block', blocks: [block] });
  }

  /**
   * The keys rules below a partial object define (`p.q.r := 1` beside `p.q[k] := v`), merged into
   * its value as OPA does: key by key down to each rule, a key both define with different values
   * being a conflict; a partial set below a partial object of sets adds to that key's set.
   */
  private mergeKeysFromBelow(group: RuleGroup, node: DataNode, object: Local, env: Env, message: string): void {
    for (const [name, child] of sortedChildren(node)) {
      const key = this.str(name);
      const rule = child.group;
      if (!rule) {
        this.mergeKeysFromBelow(group, child, this.collectionAt(object, key, 'object', message), env, message);
      } else if (group.kind === 'partialObjectOfSets' && rule.kind === 'partialSet') {
        this.withRuleValue(rule, env, (set) => {
          const index = this.local();
          const element = this.local();
          const block = this.block(() =>
            this.emit({ op: 'SetAdd', set: this.collectionAt(object, key, 'set', message), value: { local: element } }),
          );
          this.emit({ op: 'Scan', source: set, key: index, value: element, block });
        });
      } else if (rule.kind !== 'function') {
        this.withRuleValue(rule, env, (value) => this.emit({ op: 'ObjectInsertOnce', object, key, value: { local: value }, message }));
      }
    }
  }

  /** The document of a package: its base data merged with the value of every defined rule. */
  private virtualDoc(node: DataNode, path: string[], env: Env): Local {
    const o = this.local();
    this.emit({ op: 'MakeObject', target: o });
    for (const [name, child] of sortedChildren(node)) {
      const insert = (value: Local): void => this.emit({ op: 'ObjectInsert', object: o, key: this.str(name), value: { local: value } });
      if (!child.group) insert(this.virtualDoc(child, [...path, name], env));
      else if (child.group.kind !== 'function') this.withRuleValue(child.group, env, insert);
    }
    const base = this.local();
    const merged = this.local();
    const lookups: Stmt[] = [];
    let cur = env.data;
    for (const key of path) {
      const next = this.local();
      lookups.push({ op: 'Dot', source: { local: cur }, key: this.str(key), target: next });
      cur = next;
    }
    this.emit({
      op: 'Block',
      blocks: [{ stmts: [
        ...lookups,
        { op: 'Assign', source: { local: cur }, target: base },
        { op: 'IsObject', source: { local: base } },
        { op: 'Call', func: 'object.union', args: [{ local: base }, { local: o }], target: merged },
        { op: 'Assign', source: { local: merged }, target: o },
      ] }],
    });
    return o;
  }
}

/** A node's children in key order, the order of the documents built from them. */
function sortedChildren(node: DataNode): Array<[string, DataNode]> {
  return [...node.children].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The functions the plans call, directly or through other functions, in planning order. */
function reachable(funcs: Func[], plans: Plan[]): Func[] {
  const byName = new Map(funcs.map((f) => [f.name, f]));
  const seen = new Set<string>();
  const visit = (blocks: Block[]): void => {
    const walk = (stmts: Stmt[]): void => {
      for (const s of stmts) {
        if (s.op === 'Call') {
          const f = byName.get(s.func);
          if (f && !seen.has(f.name)) {
            seen.add(f.name);
            visit(f.blocks);
          }
        } else if (s.op === 'Block') s.blocks.forEach((b) => walk(b.stmts));
        else if (s.op === 'Scan' || s.op === 'Not') walk(s.block.stmts);
      }
    };
    blocks.forEach((b) => walk(b.stmts));
  };
  plans.forEach((p) => visit(p.blocks));
  return funcs.filter((f) => seen.has(f.name));
}

/**
 * Plans a checked program for the given entrypoints; with `probes`, a traced build whose probes
 * are appended there (see probes.ts).
 */
export function planProgram(program: Program, entrypoints: string[], probes?: Probe[]): Policy {
  return new Planner(program, probes).plan(entrypoints);
}
